"""A deployment's ports, credentials and configuration files.

Ports are checked before any work and owned by the deployment once it listens: a stranger
already listening on the chosen port makes ``flower deploy`` refuse, and it receives
nothing. The run's credentials (a CA, the SuperLink's certificate, SuperNode keys) are
readable by their owner alone where they are secret. Paths holding quotes, backslashes,
newlines or non-ASCII characters pass through the TOML files and Flower's ``--node-config``
parser unchanged. The localhost deployment with TLS and node authentication runs in
``tests/learning/test_flower.py`` (slow).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from collabecon.cli import main
from learning.runtimes.flower.ports import check_ports, refuse_taken, wait_until_listening

LINUX = sys.platform.startswith("linux")
TINY = ["--dataset", "digits", "--model", "mlp", "--clients", "3", "--rounds", "1"]
HOSTILE = 'it\'s a "run" \\ \nhere \N{GRINNING FACE}\t='


def _toml(text: str) -> dict:
    """``text`` read as TOML (Python 3.10 has no ``tomllib``; Flower brings ``tomli``)."""
    try:
        import tomllib
    except ModuleNotFoundError:
        import tomli as tomllib
    return tomllib.loads(text)


class _Stranger:
    """A plain TCP listener on 127.0.0.1 that records every connection and byte it gets."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.socket.settimeout(0.05)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with connection:
                connection.settimeout(1.0)
                while chunk := connection.recv(4096):
                    self.received += chunk

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.mark.flower
def test_deploy_refuses_a_port_a_stranger_listens_on_and_sends_it_nothing(tmp_path, capsys):
    stranger = _Stranger()
    try:
        out = tmp_path / "run"
        code = main(["flower", "deploy", *TINY, "--port", str(stranger.port), "--out", str(out)])
        err = capsys.readouterr().err
    finally:
        stranger.close()
    assert code == 2
    assert err.count("\n") == 1 and f"--port {stranger.port}" in err and "Traceback" not in err
    assert (stranger.connections, stranger.received) == (0, b"")
    assert not out.exists()  # refused before the partitions were written


def test_a_supernodes_port_taken_is_refused_naming_the_flag():
    stranger = _Stranger()
    try:
        with pytest.raises(
            ValueError, match=rf"--port {stranger.port - 101}: port {stranger.port}"
        ):
            refuse_taken("--port", stranger.port - 101, 3)
    finally:
        stranger.close()
    assert stranger.connections == 0


@pytest.mark.parametrize(
    ("port", "nodes", "message"),
    [
        (0, 1, "in 1-65535, got 0"),
        (70000, 1, "in 1-65535, got 70000"),
        (True, 1, "got True"),
        (65435, 2, "SuperNode 1's port would be 65536"),
    ],
)
def test_ports_out_of_range_are_refused(port, nodes, message):
    with pytest.raises(ValueError, match=message):
        check_ports("--port", port, nodes)


@pytest.mark.skipif(not LINUX, reason="the owner of a listening socket is read from /proc")
def test_a_stranger_listening_beside_the_deployment_is_refused():
    """Two sockets share a port (``SO_REUSEPORT``): the deployment's process and a stranger
    (this test). The wait finds the deployment's listener and refuses the port."""
    listen = (
        "import socket, sys, time\n"
        "s = socket.socket()\n"
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
        "s.bind(('127.0.0.1', int(sys.argv[1])))\n"
        "s.listen()\n"
        "time.sleep(60)\n"
    )
    stranger = socket.socket()
    stranger.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    stranger.bind(("127.0.0.1", 0))
    port = stranger.getsockname()[1]
    ours = subprocess.Popen([sys.executable, "-c", listen, str(port)])
    try:
        wait_until_listening("--port", port, "the SuperLink", ours, lambda: {ours.pid}, 30.0)
        stranger.listen()
        with pytest.raises(ValueError, match=f"another process listens on port {port}"):
            wait_until_listening("--port", port, "the SuperLink", ours, lambda: {ours.pid}, 30.0)
    finally:
        ours.kill()
        ours.wait()
        stranger.close()


@pytest.mark.flower
def test_strings_with_quotes_and_newlines_pass_toml_and_the_node_config_parser():
    from flwr.common.config import parse_config_args

    from learning.runtimes.flower.quoting import toml_string

    for value in (HOSTILE, "a'b", 'a"b', 'a\\"b', "x = y", "=\"'", "\x7f\x01"):
        assert _toml(f"v = {toml_string(value)}")["v"] == value
        parsed = parse_config_args([f"partition-id=2 data-dir={toml_string(value)}"])
        assert parsed == {"partition-id": 2, "data-dir": value}
    with pytest.raises(ValueError, match="not valid Unicode"):
        toml_string("run-\udcff")


@pytest.mark.flower
def test_prepare_writes_credentials_and_commands_for_a_path_that_needs_quoting(tmp_path, capsys):
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    out = tmp_path / HOSTILE
    argv = ["flower", "prepare", "--json", *TINY, "--host", "10.1.2.3", "--port", "9000"]
    assert main([*argv, "--out", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "meta.json",
        *(f"partition-{k}.npz" for k in range(3)),
    ]
    assert result["security"] == "tls+node-auth" and result["address"] == "10.1.2.3:9000"
    app = _toml((out / "app" / "pyproject.toml").read_text())
    assert app["tool"]["flwr"]["app"]["components"] == {
        "serverapp": "learning.runtimes.flower.apps:server_app",
        "clientapp": "learning.runtimes.flower.apps:client_app",
    }
    assert app["tool"]["flwr"]["app"]["config"]["meta-dir"] == str(out / "data")
    home = _toml((out / "flwr-home" / "config.toml").read_text())
    credentials = out / "credentials"
    assert home["superlink"]["collabecon"] == {
        "address": "10.1.2.3:9000",
        "root-certificates": str(credentials / "ca.crt"),
    }
    modes = {p.name: p.stat().st_mode & 0o777 for p in credentials.iterdir()}
    assert credentials.stat().st_mode & 0o777 == 0o700
    secret = {"server.key", "node-0.key", "node-1.key", "node-2.key"}
    assert {name for name, mode in modes.items() if mode == 0o600} == secret
    assert all(mode & 0o022 == 0 for mode in modes.values())
    ca = x509.load_pem_x509_certificate((credentials / "ca.crt").read_bytes())
    server = x509.load_pem_x509_certificate((credentials / "server.crt").read_bytes())
    server.verify_directly_issued_by(ca)
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "10.1.2.3" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    assert isinstance(server.public_key(), ec.EllipticCurvePublicKey)
    commands = result["commands"]
    assert "--enable-supernode-auth" in commands["superlink"]
    assert commands["superlink"][1:5] == ["--host", "10.1.2.3", "--port", "9000"]
    assert "--disable-runtime-dependency-installation" in commands["superlink"]
    assert len(commands["register"]) == 3 and len(commands["supernodes"]) == 3
    node = commands["supernodes"][2]
    assert node[node.index("--auth-supernode-private-key") + 1] == str(credentials / "node-2.key")
    assert node[node.index("--port") + 1] == "9102"
    assert "--insecure" not in sum(commands["supernodes"], commands["superlink"])


@pytest.mark.flower
def test_prepare_insecure_says_what_it_gives_up_and_writes_no_credentials(tmp_path, capsys):
    assert main(["flower", "prepare", *TINY, "--insecure", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "--insecure: the SuperLink serves plain HTTP" in captured.err
    assert "no TLS, no SuperNode authentication" in captured.out
    assert not (tmp_path / "credentials").exists()
    home = _toml((tmp_path / "flwr-home" / "config.toml").read_text())
    assert home["superlink"]["collabecon"] == {"address": "127.0.0.1:8000", "insecure": True}
    assert Path(tmp_path / "app" / "pyproject.toml").exists()


@pytest.mark.flower
def test_a_deployment_that_fails_after_it_started_exits_1_saying_why(tmp_path, monkeypatch, capsys):
    import learning.runtimes.flower.deploy as deploy

    monkeypatch.setattr(deploy, "_bin", lambda name: "/bin/false")  # every process exits 1
    out = tmp_path / "run"
    with socket.socket() as probe:  # a port free now (its SuperNodes' above it are likely so)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["flower", "deploy", *TINY, "--port", str(port), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("deployment failed: the SuperLink exited with code 1\n")
    assert (out / "superlink.log").exists() and (out / "data" / "meta.json").exists()
