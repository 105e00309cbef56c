"""Readers of the dataset files on disk: MNIST-like IDX, Keras-style ``.npz``, CIFAR pickles.

The formats are MNIST-like IDX files (MNIST, Fashion-MNIST, and EMNIST in its official
distribution), Keras-style ``.npz`` archives, and CIFAR's python pickle batches.

Nothing is downloaded: the files are read from a directory the caller names (``data_dir``,
or the environment variable :data:`DATA_ENV`), and a missing file raises
:class:`MissingDataError` naming the file and where to put it. Reading a file never runs
code from it: CIFAR batches go through an unpickler that admits numpy arrays and nothing
else, ``.npz`` archives are opened with ``allow_pickle=False``; a corrupt, truncated or
crafted file raises a :class:`ValueError` naming it. The readers return the raw arrays;
:mod:`learning.data` normalises them into its datasets.
"""

from __future__ import annotations

import gzip
import importlib
import os
import pickle
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DATA_ENV",
    "EMNIST_CLASSES",
    "MNIST_LIKE_CLASSES",
    "MissingDataError",
    "cifar_arrays",
    "data_root",
    "emnist_arrays",
    "mnist_like_arrays",
]

#: Environment variable naming the directory that holds the file-based datasets.
DATA_ENV = "COLLABECON_DATA"


class MissingDataError(FileNotFoundError, ValueError):
    """A dataset file is not on disk. The message names the file(s) and where to put them.

    Also a :class:`ValueError`, so the command line reports it in one line (exit code 2).
    """


def data_root(data_dir: str | os.PathLike[str] | None, name: str, expected: str) -> Path:
    """The directory to read the files of dataset ``name`` from.

    Parameters
    ----------
    data_dir : path or None
        The directory the caller names; None reads the environment variable
        :data:`DATA_ENV`.
    name : str
        The dataset, named in the error message.
    expected : str
        What the directory should hold, named in the error message.

    Raises
    ------
    MissingDataError
        ``data_dir`` is empty, or None with :data:`DATA_ENV` unset or empty.
    """
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV)
    if not data_dir:
        raise MissingDataError(
            f"dataset {name!r} is read from local files and nothing is downloaded: pass "
            f"data_dir (--data-dir) or set {DATA_ENV} to a directory holding {expected}"
        )
    return Path(data_dir)


def _read_idx(path: Path, ndim: int | None = None) -> np.ndarray:
    """The unsigned-byte array of the IDX file ``path`` (optionally gzipped).

    With ``ndim`` the magic number must announce that many dimensions (``0x00000803`` for
    images, ``0x00000801`` for labels).
    """
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            raw = handle.read()
    except (OSError, EOFError, zlib.error) as exc:  # a corrupt or truncated gzip stream
        raise ValueError(f"{path} cannot be read: {_first_line(exc)}") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file (magic number {raw[:4].hex()})")
    if ndim is not None and raw[3] != ndim:
        raise ValueError(
            f"{path}: magic number {raw[:4].hex()} announces {raw[3]} dimensions, "
            f"expected 0x0000080{ndim} ({ndim} dimensions)"
        )
    ndim = raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path} is truncated: its header announces {ndim} dimensions")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path} holds {data.size} values, its header says {shape}")
    return data.reshape(shape)


_IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _find(directory: Path, stem: str) -> Path | None:
    for candidate in (directory / stem, directory / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


#: The classes of the MNIST-like datasets (MNIST's digits, Fashion-MNIST's garments).
MNIST_LIKE_CLASSES = 10


def mnist_like_arrays(
    data_dir: str | os.PathLike[str] | None, name: str, part: str
) -> tuple[np.ndarray, np.ndarray]:
    """The raw images (N x 28 x 28) and labels of ``name`` under ``data_dir``.

    They are read from the Keras-style archive ``<name>.npz`` if present, else the IDX files
    (optionally gzipped) in ``<name>/``; ``part`` is 'all' (train then test), 'train' or
    'test'. Each file is checked: images of 28 x 28 pixels (in ``[0, 255]``), as many labels
    as images, and integer labels in ``[0, MNIST_LIKE_CLASSES)``; an error names the file
    and the field (the IDX file's magic number, shape or labels; the archive's ``x_*`` or
    ``y_*``).

    Raises
    ------
    MissingDataError
        Neither the archive nor the IDX files are there (the message names them).
    ValueError
        A file that fails a check.
    """
    root = data_root(data_dir, name, f"{name}/ (IDX files) or {name}.npz")
    parts = ("train", "test") if part == "all" else (part,)
    npz = root / f"{name}.npz"
    if npz.is_file():
        return _read_npz(npz, parts)
    folder = root / name
    stems = [stem for p in parts for stem in _IDX_FILES[p]]
    found = [_find(folder, stem) for stem in stems]
    missing = [stem for stem, path in zip(stems, found, strict=True) if path is None]
    if missing:
        raise MissingDataError(
            f"dataset {name!r}: missing {', '.join(str(folder / m) for m in missing)} "
            f"(IDX files, optionally .gz); put the IDX files in {folder}/ or a "
            f"Keras-style archive with x_train, y_train, x_test, y_test at {npz}"
        )
    pairs = [
        _idx_pair(images, labels, 0, MNIST_LIKE_CLASSES, name)
        for images, labels in zip(found[0::2], found[1::2], strict=True)
        if images is not None and labels is not None
    ]
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


def _idx_pair(
    image_path: Path, label_path: Path, low: int, high: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """The images and labels of one pair of IDX files, each checked; an error names the file.

    The magic numbers (``0x00000803`` images, ``0x00000801`` labels), images of 28 x 28, as
    many labels as images, and labels in ``[low, high)`` (the classes of ``what``).
    """
    x = _read_idx(image_path, ndim=3)
    y = _read_idx(label_path, ndim=1)
    if x.shape[1:] != (28, 28):
        raise ValueError(f"{image_path}: image shape {x.shape[1:]}, expected (28, 28)")
    if y.shape[0] != x.shape[0]:
        raise ValueError(
            f"{label_path}: {y.shape[0]} labels for the {x.shape[0]} images of {image_path}"
        )
    if y.size and not (low <= int(y.min()) and int(y.max()) < high):
        raise ValueError(
            f"{label_path}: labels in [{int(y.min())}, {int(y.max())}], {what} has labels "
            f"in [{low}, {high - 1}]"
        )
    return x, y


#: EMNIST's official splits and the range ``[low, high)`` of each one's labels (Cohen,
#: Afshar, Tapson and van Schaik 2017, "EMNIST: an extension of MNIST to handwritten letters",
#: Table II): ``letters`` numbers its 26 classes from 1, the others from 0.
EMNIST_CLASSES: dict[str, tuple[int, int]] = {
    "balanced": (0, 47),
    "byclass": (0, 62),
    "bymerge": (0, 47),
    "digits": (0, 10),
    "letters": (1, 27),
    "mnist": (0, 10),
}


def emnist_arrays(
    data_dir: str | os.PathLike[str] | None, split: str, part: str
) -> tuple[np.ndarray, np.ndarray]:
    """The images (uint8, N x 28 x 28, upright) and raw labels of EMNIST's ``split``.

    The files are those of the official distribution, ``emnist-<split>-<train|test>-
    <images-idx3|labels-idx1>-ubyte`` (optionally ``.gz``), in ``<data_dir>/`` or its
    ``gzip/`` folder (the official archive's). ``part`` is 'all' (train then test), 'train'
    or 'test'. EMNIST stores every image transposed (column-major) relative to MNIST: the
    images are transposed back. Each file is checked: the magic number (``0x00000803``
    images, ``0x00000801`` labels), images of 28 x 28, as many labels as images, and labels
    in the split's range (:data:`EMNIST_CLASSES`); an error names the file and the field.

    Raises
    ------
    MissingDataError
        A file is not in either folder (the message names them).
    ValueError
        An unknown ``split`` or ``part``, or a file that fails a check.
    """
    if split not in EMNIST_CLASSES:
        raise ValueError(f"split must be one of {', '.join(EMNIST_CLASSES)}, got {split!r}")
    if part not in ("all", "train", "test"):
        raise ValueError(f"part must be one of all, train, test, got {part!r}")
    root = data_root(data_dir, f"emnist-{split}", f"the official EMNIST files emnist-{split}-*")
    folders = (root, root / "gzip")
    low, high = EMNIST_CLASSES[split]
    images, labels = [], []
    for p in ("train", "test") if part == "all" else (part,):
        stems = [f"emnist-{split}-{p}-{kind}-ubyte" for kind in ("images-idx3", "labels-idx1")]
        found = [next(filter(None, (_find(f, stem) for f in folders)), None) for stem in stems]
        missing = [stem for stem, path in zip(stems, found, strict=True) if path is None]
        if missing:
            raise MissingDataError(
                f"dataset 'emnist' (split {split!r}): missing {', '.join(missing)} (optionally "
                f".gz) in {root} and {root / 'gzip'}; unpack EMNIST's official gzip archive there"
            )
        image_path, label_path = (path for path in found if path is not None)
        x, y = _idx_pair(image_path, label_path, low, high, f"split {split!r}")
        images.append(x.transpose(0, 2, 1))
        labels.append(y)
    return np.concatenate(images), np.concatenate(labels)


def _read_npz(path: Path, parts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``x_<part>`` and ``y_<part>`` of a Keras-style archive, concatenated over ``parts``.

    Read with ``allow_pickle=False``: an archive member holding Python objects is refused.
    A file that is not such an archive (not a zip, truncated, a member missing or not an
    array of numbers) raises a :class:`ValueError` naming the file.
    """
    keys = [f"{axis}_{p}" for axis in ("x", "y") for p in parts]
    with open(path, "rb") as handle:
        magic = handle.read(6)
    if magic.startswith(b"\x93NUMPY"):
        raise ValueError(f"{path} is a single .npy array, not a .npz archive holding {keys}")
    if not magic.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        raise ValueError(f"{path} is not a .npz archive (a zip file holding {keys})")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a readable .npz archive: {_first_line(exc)}") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} is a single .npy array, not a .npz archive holding {keys}")
    with archive:
        missing = [key for key in keys if key not in archive.files]
        if missing:
            raise ValueError(f"{path} lacks {missing}; a Keras-style archive holds {keys}")
        try:
            arrays = {key: archive[key] for key in keys}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            raise ValueError(f"{path} cannot be read: {_first_line(exc)}") from None
    xs = [arrays[f"x_{p}"] for p in parts]
    ys = [arrays[f"y_{p}"] for p in parts]
    for key, value in arrays.items():
        if value.dtype.kind not in "uif":
            raise ValueError(f"{path}: {key} must hold numbers, got dtype {value.dtype}")
    if any(x.shape[1:] != (28, 28) for x in xs):
        raise ValueError(f"{path}: x_* must be 28x28 images, got shapes {[x.shape for x in xs]}")
    if any(x.shape[0] != y.shape[0] for x, y in zip(xs, ys, strict=True)):
        raise ValueError(f"{path}: x_* and y_* disagree on the number of examples")
    for p, x, y in zip(parts, xs, ys, strict=True):
        if x.size and not (np.isfinite(x).all() and x.min() >= 0 and x.max() <= 255):
            raise ValueError(f"{path}: x_{p} must hold pixel values in [0, 255]")
        if y.ndim != 1:
            raise ValueError(f"{path}: y_{p} must be one label per image, got shape {y.shape}")
        if y.size and not (np.isfinite(y).all() and (y == np.round(y)).all()):
            raise ValueError(f"{path}: y_{p} must hold integer labels")
        if y.size and not (0 <= y.min() and y.max() < MNIST_LIKE_CLASSES):
            raise ValueError(
                f"{path}: y_{p} holds labels in [{y.min():g}, {y.max():g}], expected "
                f"[0, {MNIST_LIKE_CLASSES - 1}]"
            )
    return np.concatenate(xs), np.concatenate(ys)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _numpy_internal(module: str, name: str) -> Callable[[], Any]:
    """Resolver of ``numpy._core.<module>.<name>`` (numpy 2.x; ``numpy.core`` in 1.x)."""

    def resolve() -> Any:
        try:
            found = importlib.import_module(f"numpy._core.{module}")
        except ImportError:  # pragma: no cover - numpy 1.x
            found = importlib.import_module(f"numpy.core.{module}")
        return getattr(found, name)

    return resolve


def _latin1_bytes() -> Callable[..., Any]:
    def encode(text: str, encoding: str = "latin1") -> bytes:
        if not isinstance(text, str) or encoding != "latin1":
            raise ValueError(f"_codecs.encode admits a str and 'latin1' only, got {encoding!r}")
        return text.encode("latin1")

    return encode


#: The globals a CIFAR python batch may name: numpy's array and scalar reconstruction
#: (under the module names of numpy 1.x, which wrote the published files, and of numpy 2.x),
#: the array and dtype classes, and ``_codecs.encode(str, "latin1")``, which pickle protocol 2
#: of Python 3 writes for bytes. Dicts, lists, strings, bytes and ints need no global.
_CIFAR_GLOBALS: dict[tuple[str, str], Callable[[], Any]] = {
    (f"numpy.{core}.{module}", name): _numpy_internal(module, name)
    for core in ("core", "_core")
    for module, name in (
        ("multiarray", "_reconstruct"),
        ("multiarray", "scalar"),
        ("numeric", "_frombuffer"),
    )
} | {
    ("numpy", "ndarray"): lambda: np.ndarray,
    ("numpy", "dtype"): lambda: np.dtype,
    ("_codecs", "encode"): _latin1_bytes,
}


class _BatchUnpickler(pickle.Unpickler):
    """Unpickler of a CIFAR python batch: admits only the globals of :data:`_CIFAR_GLOBALS`.

    Any other global (a function or class a crafted file would call while loading) raises
    a :class:`ValueError` naming the file and the global, before anything is called.
    """

    def __init__(self, handle: Any, path: Path) -> None:
        super().__init__(handle, encoding="bytes")
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        resolve = _CIFAR_GLOBALS.get((module, name))
        if resolve is None:
            raise ValueError(
                f"{self._path} is not a CIFAR python batch: it refers to {module}.{name}, "
                "and a batch holds only dicts, lists, strings, bytes, ints and numpy arrays"
            )
        return resolve()


def _unpickle(path: Path) -> dict[bytes, Any]:
    """A CIFAR python batch read with :class:`_BatchUnpickler` (no other code can run).

    Raises a :class:`ValueError` naming ``path`` when the file is not such a batch: a
    refused global, a corrupt or truncated pickle, or another layout than a dict with a
    ``b"data"`` array of uint8 rows of 3,072 pixels.
    """
    try:
        with open(path, "rb") as handle:
            batch = _BatchUnpickler(handle, path).load()
    except ValueError as exc:
        raise ValueError(
            _first_line(exc) if str(path) in str(exc) else f"{path}: {_first_line(exc)}"
        ) from None
    except (
        pickle.UnpicklingError,
        EOFError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        OverflowError,
        MemoryError,
        OSError,
    ) as exc:
        reason = f"{type(exc).__name__}: {_first_line(exc)}"
        raise ValueError(f"{path} is not a readable CIFAR python batch: {reason}") from None
    if not isinstance(batch, dict):
        raise ValueError(
            f"{path} is not a CIFAR python batch: it holds a {type(batch).__name__}, not a dict"
        )
    data = batch.get(b"data")
    if (
        not isinstance(data, np.ndarray)
        or data.dtype != np.uint8
        or data.ndim != 2
        or data.shape[1] != 3 * 32 * 32
    ):
        described = (
            f"an array of dtype {data.dtype} and shape {data.shape}"
            if isinstance(data, np.ndarray)
            else ("no such key" if data is None else type(data).__name__)
        )
        raise ValueError(
            f"{path} is not a CIFAR python batch: b'data' must be a uint8 array of "
            f"N x 3072 pixels, got {described}"
        )
    return batch


def cifar_arrays(
    data_dir: str | os.PathLike[str] | None,
    name: str,
    folder: str,
    files: dict[str, tuple[str, ...]],
    label_key: bytes,
    n_classes: int,
    part: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The raw pixels (uint8, N x 3072) and labels of the python pickle batches of ``name``.

    The batches are those in ``<data_dir>/<folder>/`` listed in ``files[part]`` (both parts,
    train first, for 'all'), each read with :class:`_BatchUnpickler` and its labels
    ``label_key`` checked to lie in ``[0, n_classes)``.
    """
    root = data_root(data_dir, name, f"{folder}/ (the python version)") / folder
    wanted = [f for p in (("train", "test") if part == "all" else (part,)) for f in files[p]]
    missing = [f for f in wanted if not (root / f).is_file()]
    if missing:
        raise MissingDataError(
            f"dataset {name!r}: missing {', '.join(str(root / m) for m in missing)}; "
            f"unpack the python version of {name} so that {root}/ holds "
            f"{', '.join(wanted)}"
        )
    batches = [_unpickle(root / f) for f in wanted]
    for f, b in zip(wanted, batches, strict=True):
        _check_labels(root / f, b, label_key, n_classes)
    pixels = np.concatenate([b[b"data"] for b in batches])
    labels = np.concatenate([np.asarray(b[label_key]) for b in batches])
    return pixels, labels


def _check_labels(path: Path, batch: dict[bytes, Any], key: bytes, n_classes: int) -> None:
    labels = batch.get(key)
    n = batch[b"data"].shape[0]
    ok = isinstance(labels, list) and len(labels) == n
    if ok:
        values = np.asarray(labels)
        ok = (
            values.ndim == 1
            and values.dtype.kind in "iu"
            and bool(np.all((values >= 0) & (values < n_classes)))
        )
    if not ok:
        raise ValueError(
            f"{path} is not a CIFAR python batch: {key!r} must list {n} integer labels "
            f"in [0, {n_classes})"
        )
