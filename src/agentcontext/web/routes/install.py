"""Add a pack from the browser (a folder uploaded as a zip, or, for the owner or an admin of ``*``, a path on the
server) and export one as a zip. Installing is ``packs.install_folder`` acting as the session's principal (write
on a ``lib:`` pack, admin on a ``pkg:`` one); the result is shown on a page of its own. An upload is unpacked into
a temporary folder: members with absolute paths, ``..`` or links are refused, and so is an archive over the size
limits."""
from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ... import access
from ...errors import ValidationError
from ...knowledge import packs
from ...knowledge.export import export_pack
from ..render import page
from ..requests import checked_form, console, principal
from . import text_param

MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_UNPACKED_BYTES = 200 * 1024 * 1024


async def add_page(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    return page(request, "add_pack.html", admin=access.is_superadmin(ws, who), error=None)


def unpack(data: bytes, into: Path) -> Path:
    """Extract a zip safely into ``into``; the pack folder (the single top folder, if there is one)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ValidationError("the upload is not a zip archive; zip the pack folder and upload that") from None
    total = 0
    for info in archive.infolist():
        name = PurePosixPath(info.filename)
        if name.is_absolute() or ".." in name.parts or (info.external_attr >> 16) & 0o170000 == 0o120000:
            raise ValidationError(f"the archive holds an unsafe member {info.filename!r} (absolute, '..' or a link)")
        total += info.file_size
        if total > MAX_UNPACKED_BYTES:
            raise ValidationError(f"the archive unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MB")
    archive.extractall(into)
    entries = [p for p in into.iterdir() if not p.name.startswith(("__MACOSX", "."))]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else into


async def add_submit(request: Request) -> Response:
    form = await checked_form(request)
    ws, who = console(request).ws, principal(request)
    upload, path = form.get("archive"), text_param(form, "path")
    if isinstance(upload, UploadFile) and upload.filename:
        data = await upload.read(MAX_ZIP_BYTES + 1)
        if len(data) > MAX_ZIP_BYTES:
            raise ValidationError(f"the zip is over {MAX_ZIP_BYTES // 2**20} MB; install it with the CLI")
        tmp = Path(tempfile.mkdtemp(prefix="actx-upload-"))
        try:
            installed = packs.install_folder(ws, unpack(data, tmp), principal=who, defer_embeddings=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        source = upload.filename
    elif path:
        if not access.is_superadmin(ws, who):
            access.record(ws, who, "install", path, {"outcome": "denied", "reason": "server path"})
            raise ValidationError("only the owner or an admin of `*` may install from a path on the server; "
                                  "upload the folder as a zip instead")
        installed = packs.install_folder(ws, path, principal=who, defer_embeddings=True)
        source = path
    else:
        raise ValidationError("choose a zip to upload or give a path on the server")
    return page(request, "installed.html", installed=installed, source=source)


async def export_zip(request: Request) -> Response:
    ws, who = console(request).ws, principal(request)
    pack = request.path_params["pack"]
    tmp = Path(tempfile.mkdtemp(prefix="actx-export-"))
    try:
        export_pack(ws, pack, tmp / "pack", principal=who)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted((tmp / "pack").rglob("*")):
                if file.is_file():
                    archive.write(file, file.relative_to(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    name = pack.replace(":", "-")
    return Response(buffer.getvalue(), media_type="application/zip",
                    headers={"content-disposition": f'attachment; filename="{name}.zip"'})


ROUTES = [
    Route("/add-pack", add_page, methods=["GET"]),
    Route("/add-pack", add_submit, methods=["POST"]),
    Route("/packs/{pack}/export.zip", export_zip),
]
