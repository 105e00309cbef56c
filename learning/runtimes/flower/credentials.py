"""The credentials of one deployment: a CA, the SuperLink's TLS certificate, SuperNode keys.

:func:`write_credentials` makes them with the ``cryptography`` package (a dependency of
Flower) for one run and writes them to a directory only its owner can enter (mode 0700):

``ca.crt``
    a self-signed certificate authority (ECDSA P-384). Its private key signs the server
    certificate and is then dropped, never written: no further certificate can be issued
    under it;
``server.crt``, ``server.key`` (0600)
    the SuperLink's certificate and key; the certificate names the SuperLink's address
    (``host``) and the loopback names ``127.0.0.1``, ``::1`` and ``localhost`` (the
    SuperLink's own SuperExec and ServerApp dial it there);
``node-<k>.key`` (0600), ``node-<k>.pub``
    SuperNode ``k``'s key pair for Flower's node authentication (ECDSA P-384, OpenSSH
    format, as ``flower-supernode --auth-supernode-private-key`` and ``flwr supernode
    register`` read them).

Every certificate is valid from five minutes before it is made (clocks a little apart)
for :data:`VALID_DAYS` days.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "INSECURE_COST",
    "VALID_DAYS",
    "Credentials",
    "dial_address",
    "host_address",
    "write_credentials",
]

#: what a deployment without TLS and node authentication gives up
INSECURE_COST = (
    "--insecure: the SuperLink serves plain HTTP (models, updates, metrics and the run's "
    "code cross the network readable and alterable, and nothing proves to the SuperNodes "
    "and flwr that they talk to this SuperLink) and accepts every SuperNode that connects "
    "(no node authentication)"
)

#: days a run's certificates stay valid
VALID_DAYS = 90

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True, slots=True)
class Credentials:
    """The paths of one deployment's credentials (see the module docstring)."""

    ca: Path
    certificate: Path
    key: Path
    node_keys: tuple[Path, ...]
    node_public_keys: tuple[Path, ...]


def host_address(flag: str, host: str) -> str:
    """``host`` checked as the address SuperNodes dial: an IP address or a DNS name.

    An IP address is returned in its compressed form (``::1``), a name in lower case.

    Raises
    ------
    ValueError
        One line naming ``flag`` and ``host``: neither an IP address nor a DNS name, or a
        wildcard (``0.0.0.0``, ``::``), which binds every interface but names none.
    """
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        name = host.rstrip(".").lower()
        if len(name) > 253 or not all(_LABEL.fullmatch(p) for p in name.split(".")):
            raise ValueError(f"{flag} {host!r} is neither an IP address nor a DNS name") from None
        return name
    if ip.is_unspecified:
        raise ValueError(
            f"{flag} {host!r} is a wildcard: give the address the SuperNodes dial "
            "(the SuperLink machine's address on their network)"
        )
    return ip.compressed


def dial_address(host: str, port: int) -> str:
    """``host:port`` as Flower reads an address (``[::1]:8000`` for an IPv6 address)."""
    return f"[{host}]:{int(port)}" if ":" in host else f"{host}:{int(port)}"


def _write(path: Path, data: bytes, mode: int) -> Path:
    """Write ``data`` to ``path`` with permissions ``mode`` from its creation on.

    A link in ``path``'s place is not followed; a file already there is truncated and given
    ``mode``.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)
    return path


def _subject_names(host: str) -> list[Any]:
    from cryptography import x509

    names: list[Any] = []
    for name in dict.fromkeys((host, *_LOOPBACK_NAMES)):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name))
    return names


def write_credentials(directory: str | os.PathLike[str], host: str, nodes: int) -> Credentials:
    """Make a run's CA, SuperLink certificate and ``nodes`` SuperNode key pairs.

    Parameters
    ----------
    directory : path
        Where they are written (created with mode 0700; its mode is set to 0700).
    host : str
        The SuperLink's address as the SuperNodes dial it (:func:`host_address`).
    nodes : int
        The number of SuperNodes.

    Returns
    -------
    Credentials
        The paths written.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory = Path(directory)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    pem = serialization.Encoding.PEM

    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "collabecon deployment CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA384())
    )
    server_key = ec.generate_private_key(ec.SECP384R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(_subject_names(host)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA384())
    )
    private = serialization.PrivateFormat
    plain = serialization.NoEncryption()
    node_keys, node_public_keys = [], []
    for k in range(int(nodes)):
        node = ec.generate_private_key(ec.SECP384R1())
        node_keys.append(
            _write(
                directory / f"node-{k}.key",
                node.private_bytes(pem, private.OpenSSH, plain),
                0o600,
            )
        )
        node_public_keys.append(
            _write(
                directory / f"node-{k}.pub",
                node.public_key().public_bytes(
                    serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
                ),
                0o644,
            )
        )
    return Credentials(
        ca=_write(directory / "ca.crt", ca.public_bytes(pem), 0o644),
        certificate=_write(directory / "server.crt", server.public_bytes(pem), 0o644),
        key=_write(
            directory / "server.key", server_key.private_bytes(pem, private.PKCS8, plain), 0o600
        ),
        node_keys=tuple(node_keys),
        node_public_keys=tuple(node_public_keys),
    )
