"""Image support for ``read``: sniff the type from the bytes, convert BMP to PNG, shrink to the inline limits.

Limits are Pi's: at most 2000x2000 pixels and under 4.5 MB of base64. A larger image is scaled down
(Lanczos), then encoded as PNG or JPEG (quality 80, 85, 70, 55, 40), whichever first fits; if none fits,
the dimensions shrink by a quarter and it tries again. EXIF orientation is applied first.
"""

from __future__ import annotations

import base64
import io
import math
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from caddie.jscompat import js_round, js_to_fixed

if TYPE_CHECKING:
    from PIL.Image import Image as PilImage

SNIFF_BYTES = 4100
MAX_WIDTH = 2000
MAX_HEIGHT = 2000
MAX_BASE64_BYTES = int(4.5 * 1024 * 1024)
JPEG_QUALITIES = (80, 85, 70, 55, 40)
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _u32be(data: bytes, at: int) -> int:
    chunk = data[at : at + 4].ljust(4, b"\0")
    value: int = struct.unpack(">I", chunk)[0]
    return value


def _u32le(data: bytes, at: int) -> int:
    chunk = data[at : at + 4].ljust(4, b"\0")
    value: int = struct.unpack("<I", chunk)[0]
    return value


def _u16le(data: bytes, at: int) -> int:
    chunk = data[at : at + 2].ljust(2, b"\0")
    value: int = struct.unpack("<H", chunk)[0]
    return value


def _is_png(data: bytes) -> bool:
    return len(data) >= 16 and _u32be(data, 8) == 13 and data[12:16] == b"IHDR"


def _is_animated_png(data: bytes) -> bool:
    offset = len(_PNG_SIGNATURE)
    while offset + 8 <= len(data):
        length = _u32be(data, offset)
        kind = data[offset + 4 : offset + 8]
        if kind == b"acTL":
            return True
        if kind == b"IDAT":
            return False
        next_offset = offset + 8 + length + 4
        if next_offset <= offset or next_offset > len(data):
            return False
        offset = next_offset
    return False


def _is_bmp(data: bytes) -> bool:
    if len(data) < 26:
        return False
    declared = _u32le(data, 2)
    pixel_offset = _u32le(data, 10)
    header_size = _u32le(data, 14)
    if declared != 0 and declared < 26:
        return False
    if pixel_offset < 14 + header_size:
        return False
    if declared != 0 and pixel_offset >= declared:
        return False
    if header_size == 12:
        planes, bits = _u16le(data, 22), _u16le(data, 24)
    elif 40 <= header_size <= 124:
        if len(data) < 30:
            return False
        planes, bits = _u16le(data, 26), _u16le(data, 28)
    else:
        return False
    return planes == 1 and bits in (1, 4, 8, 16, 24, 32)


def detect_image_mime_type(data: bytes) -> str | None:
    """The inline-capable image type of ``data`` (its first bytes suffice), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return None if len(data) > 3 and data[3] == 0xF7 else "image/jpeg"
    if data.startswith(_PNG_SIGNATURE):
        return "image/png" if _is_png(data) and not _is_animated_png(data) else None
    if data.startswith(b"GIF"):
        return "image/gif"
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"BM") and _is_bmp(data):
        return "image/bmp"
    return None


@dataclass(slots=True)
class ProcessedImage:
    ok: bool
    data: str = ""
    """Base64."""
    mime_type: str = ""
    hints: list[str] = field(default_factory=list)
    message: str = ""


def _open_oriented(data: bytes) -> PilImage:
    """Decode (first frame) with EXIF orientation applied. Pillow is imported on first use only."""
    from PIL import Image, ImageOps

    image = Image.open(io.BytesIO(data))
    image.load()
    return ImageOps.exif_transpose(image) or image


def _encode(image: PilImage, fmt: str, quality: int | None = None) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        rgb = image if image.mode in ("RGB", "L") else image.convert("RGB")
        rgb.save(out, "JPEG", quality=quality)
    else:
        image.save(out, "PNG")
    return out.getvalue()


def _to_png(data: bytes) -> bytes | None:
    try:
        return _encode(_open_oriented(data), "PNG")
    except Exception:  # any decoding failure means "cannot convert"
        return None


@dataclass(slots=True)
class _Resized:
    data: str
    mime_type: str
    original_width: int
    original_height: int
    width: int
    height: int
    was_resized: bool


def _resize(data: bytes, mime_type: str) -> _Resized | None:
    from PIL import Image

    base64_size = math.ceil(len(data) / 3) * 4
    try:
        image = _open_oriented(data)
        width, height = image.size
        if width <= MAX_WIDTH and height <= MAX_HEIGHT and base64_size < MAX_BASE64_BYTES:
            return _Resized(base64.b64encode(data).decode(), mime_type, width, height, width, height, False)

        target_w, target_h = width, height
        if target_w > MAX_WIDTH:
            target_h = js_round(target_h * MAX_WIDTH / target_w)
            target_w = MAX_WIDTH
        if target_h > MAX_HEIGHT:
            target_w = js_round(target_w * MAX_HEIGHT / target_h)
            target_h = MAX_HEIGHT

        source = image if image.mode in ("RGB", "RGBA", "L", "LA") else image.convert("RGBA")
        cur_w, cur_h = target_w, target_h
        while True:
            resized = source.resize((cur_w, cur_h), Image.Resampling.LANCZOS)
            candidates = [("image/png", _encode(resized, "PNG"))]
            candidates += [("image/jpeg", _encode(resized, "JPEG", q)) for q in JPEG_QUALITIES]
            for mime, encoded in candidates:
                b64 = base64.b64encode(encoded).decode()
                if len(b64) < MAX_BASE64_BYTES:
                    return _Resized(b64, mime, width, height, cur_w, cur_h, True)
            if cur_w == 1 and cur_h == 1:
                return None
            next_w = 1 if cur_w == 1 else max(1, math.floor(cur_w * 0.75))
            next_h = 1 if cur_h == 1 else max(1, math.floor(cur_h * 0.75))
            if (next_w, next_h) == (cur_w, cur_h):
                return None
            cur_w, cur_h = next_w, next_h
    except Exception:  # undecodable image: Pi reports it as "could not be resized"
        return None


def process_image(data: bytes, mime_type: str, *, auto_resize: bool = True) -> ProcessedImage:
    """Normalise (BMP -> PNG) and, with ``auto_resize``, fit the image within the inline limits."""
    converted_from: str | None = None
    if mime_type not in ("image/png", "image/jpeg", "image/gif", "image/webp"):
        png = _to_png(data)
        if png is None:
            return ProcessedImage(
                False, message="[Image omitted: could not be converted to a supported inline image format.]"
            )
        data, converted_from, mime_type = png, mime_type, "image/png"

    hints: list[str] = []
    if not auto_resize:
        if converted_from:
            hints.append(f"[Image converted from {converted_from} to {mime_type}.]")
        return ProcessedImage(True, base64.b64encode(data).decode(), mime_type, hints)

    resized = _resize(data, mime_type)
    if resized is None:
        return ProcessedImage(
            False, message="[Image omitted: could not be resized below the inline image size limit.]"
        )
    if converted_from and converted_from != resized.mime_type:
        hints.append(f"[Image converted from {converted_from} to {resized.mime_type}.]")
    if resized.was_resized:
        scale = js_to_fixed(resized.original_width / resized.width, 2)
        hints.append(
            f"[Image: original {resized.original_width}x{resized.original_height}, displayed at "
            f"{resized.width}x{resized.height}. Multiply coordinates by {scale} to map to original image.]"
        )
    return ProcessedImage(True, resized.data, resized.mime_type, hints)
