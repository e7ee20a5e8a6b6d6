"""Bytes → text, trusting evidence in the order BOM, XML declaration, HTTP charset, detection.

Labels lie in practice: feeds declare ISO-8859-1 and send UTF-8, declare UTF-16 in an 8-bit document,
or mix windows-1252 smart quotes into UTF-8. So a label is only believed when the bytes agree with it.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass, replace

import charset_normalizer

from modules.rss.parse.labels import WHATWG_LABELS

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: its BOM is a prefix of this one
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_XML_DECL_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:\-]+)["']""")
_HTTP_CHARSET = re.compile(r"""charset\s*=\s*["']?([^\s;"']+)""", re.IGNORECASE)
# WHATWG: browsers (and the feeds written for them) mean windows-1252 when they say latin-1 or ascii.
_AS_WINDOWS_1252 = frozenset({"latin-1", "iso8859-1", "ascii", "cp1252"})
_SINGLE_BYTE_PREFIXES = ("cp125", "iso8859", "koi8", "mac-", "cp437", "cp85", "cp86", "cp874")
# Candidates for detection: the legacy charsets of the web. Unrestricted, detectors pick look-alikes
# (mac-cyrillic for windows-1251 text, mac-iceland for latin-1 Portuguese).
_WEB_CHARSETS = (
    "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "koi8_r", "koi8_u",
    "iso8859_2", "gb18030", "big5", "shift_jis", "euc_jp", "euc_kr", "cp874",
)  # fmt: skip
# Detectors tell scripts apart well but confuse the Latin code pages with each other (latin-1 Portuguese
# comes back as cp1257), so a Latin guess is replaced by windows-1252, the de-facto web default.
_LATIN_GUESSES = frozenset(
    {"cp1250", "cp1252", "cp1254", "cp1257", "latin-1", "iso8859-2", "iso8859-15", "mac-roman", "ascii"}
)
# Python codecs that are no document charset (or decode escapes/markup, like UTF-7's "+ADw-" for "<").
_NOT_CHARSETS = frozenset({"undefined", "unicode-escape", "raw-unicode-escape", "utf-7", "idna", "punycode"})
_FALLBACK_ERRORS = "feedeater-cp1252"
# WHATWG encodings whose text is 7-bit: all-ASCII bytes are no reason to read them as ASCII
# (ISO-2022-JP switches to JIS X 0208 with "\x1b$B" and writes kanji as pairs of ASCII letters).
_SEVEN_BIT = frozenset({"iso2022_jp", "iso2022_jp_1", "iso2022_jp_2", "iso2022_jp_ext", "iso2022_kr"})


def _cp1252_for_invalid_utf8(err: UnicodeError) -> tuple[str, int]:
    """Decode the bytes that are not UTF-8 as windows-1252: the usual cause is a mixed-encoding feed."""
    if not isinstance(err, UnicodeDecodeError):
        raise err
    return err.object[err.start : err.end].decode("cp1252", errors="replace"), err.end


codecs.register_error(_FALLBACK_ERRORS, _cp1252_for_invalid_utf8)


# --- text repairs after decoding: C1 controls, double-encoded UTF-8 -------------------------------------

# Windows-1252's characters for 0x80-0x9F (the five bytes it leaves undefined stay C1 controls, as in browsers).
_CP1252_HIGH = {
    b: bytes([b]).decode("cp1252") for b in range(0x80, 0xA0) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
}
_CP1252_BYTE = {ch: b for b, ch in _CP1252_HIGH.items()}  # 1252 character → its byte (inverse)
# Everything works on the UTF-8 bytes with patterns that start with a literal byte: a clean document costs
# one fast scan per pattern. A C1 control (U+0080-U+009F) and a C1 character reference (&#146; &#x92;):
_C1_BYTES = re.compile(rb"\xc2([\x80-\x9f])")
_C1_REFERENCE = re.compile(rb"&#(?:0*(12[89]|1[3-5][0-9])|[xX]0*([89][0-9a-fA-F]));")
# UTF-8 read as windows-1252 and written as UTF-8 again: a lead byte C2-F4 became one of Â..ô (U+00C2-U+00F4,
# "\xc3\x82".."\xc3\xb4" in UTF-8), each continuation byte 80-BF one of U+0080-U+00BF or of windows-1252's
# characters for 0x80-0x9F.
_CONTINUATION = b"|".join(
    [rb"\xc2[\x80-\xbf]", *(re.escape(ch.encode()) for ch in _CP1252_BYTE if ord(ch) > 0xFF)]
)
_MOJIBAKE = re.compile(rb"\xc3[\x82-\xb4](?:" + _CONTINUATION + rb"){1,3}")


def _utf8_length(lead: int) -> int:
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _plausible(text: str) -> bool:
    """Characters a double encoding plausibly hid: letters, digits, punctuation, symbols, spaces of any
    script; not IPA, modifier letters or combining marks ("«ÉTÉ»" would otherwise become "«ÉTɻ")."""
    return all(not 0x250 <= ord(ch) <= 0x36F and unicodedata.category(ch)[0] in "LNPSZ" for ch in text)


def _undo_double_encoding(m: re.Match[bytes]) -> bytes:
    run = m[0].decode("utf-8")
    length = _utf8_length(ord(run[0]))
    if len(run) < length:
        return m[0]
    try:
        fixed = bytes(ord(ch) if ord(ch) < 0x100 else _CP1252_BYTE[ch] for ch in run[:length]).decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return m[0]
    return (fixed + run[length:]).encode("utf-8") if _plausible(fixed) else m[0]


def _c1_character(m: re.Match[bytes]) -> bytes:
    char = _CP1252_HIGH.get(m[1][0])
    return char.encode("utf-8") if char else m[0]


def _c1_reference(m: re.Match[bytes]) -> bytes:
    char = _CP1252_HIGH.get(int(m[1]) if m[1] else int(m[2], 16))
    return char.encode("utf-8") if char else m[0]


_ALL_REPAIRS = (
    (_MOJIBAKE, _undo_double_encoding, "double-encoded UTF-8 decoded once more"),
    (_C1_BYTES, _c1_character, "C1 control characters read as windows-1252"),
    (_C1_REFERENCE, _c1_reference, "C1 character references read as windows-1252"),
)
_REFERENCE_REPAIRS = _ALL_REPAIRS[2:]


def repair_text(decoded: Decoded) -> Decoded:
    """Text the way a browser shows it: double-encoded UTF-8 ("FÃ³rmula") decoded once more when that gives
    UTF-8, and C1 controls (a raw U+0092, "&#146;") read as the windows-1252 characters they were meant
    to be ("’")."""
    utf8, warnings = decoded.utf8, list(decoded.warnings)
    repairs = _REFERENCE_REPAIRS if utf8.isascii() else _ALL_REPAIRS  # the first two need non-ASCII bytes
    for pattern, repair, what in repairs:
        if pattern.search(utf8) is not None and (fixed := pattern.sub(repair, utf8)) != utf8:
            utf8 = fixed
            warnings.append(what)
    if utf8 is decoded.utf8:
        return decoded
    return replace(decoded, text=utf8.decode("utf-8"), utf8=utf8, warnings=tuple(warnings))


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    utf8: bytes  # the same document as UTF-8 without BOM (for lxml, which is told the encoding)
    encoding: str  # codec actually used
    warnings: tuple[str, ...] = ()


def _codec(label: str | None) -> str | None:
    """Python's canonical codec name for a charset label (as the web means it: labels.py), or None."""
    if not label:
        return None
    label = label.strip().lower()
    try:
        info = codecs.lookup(WHATWG_LABELS.get(label, label))
    except LookupError:
        return None
    name = info.name
    if not getattr(info, "_is_text_encoding", True) or name in _NOT_CHARSETS:
        return None
    if name in _AS_WINDOWS_1252:
        return "cp1252"
    return "utf-8" if name == "utf-8-sig" else name


def _is_single_byte(codec: str) -> bool:
    return codec.startswith(_SINGLE_BYTE_PREFIXES)


def _utf16_without_bom(head: bytes) -> str | None:
    """XML without a BOM starts with '<' (or whitespace): in UTF-16 every other byte is then NUL."""
    if len(head) < 4:
        return None
    even_nuls, odd_nuls = head[0::2].count(0), head[1::2].count(0)
    if even_nuls > len(head) // 4 and odd_nuls == 0:
        return "utf-16-be"
    if odd_nuls > len(head) // 4 and even_nuls == 0:
        return "utf-16-le"
    return None


def _detect(body: bytes) -> str:
    """A non-Latin guess, or "utf-8" meaning UTF-8 with windows-1252 for the bytes that are not UTF-8."""
    best = charset_normalizer.from_bytes(body[:65536], cp_isolation=list(_WEB_CHARSETS)).best()
    guess = _codec(best.encoding) if best is not None else None
    return "utf-8" if guess is None or guess in _LATIN_GUESSES else guess


def _decode_as(body: bytes, codec: str, warnings: list[str]) -> Decoded:
    """Decode with a codec the evidence chose; never raises."""
    if codec == "utf-8":
        try:
            return Decoded(body.decode("utf-8"), body, codec, tuple(warnings))
        except UnicodeDecodeError:
            warnings.append("invalid UTF-8 bytes decoded as windows-1252")
            text = body.decode("utf-8", errors=_FALLBACK_ERRORS)
    else:
        try:
            text = body.decode(codec)
        except UnicodeDecodeError:
            warnings.append(f"bytes that are not valid {codec} were replaced")
            text = body.decode(codec, errors="replace")
    return Decoded(text, text.encode("utf-8"), codec, tuple(warnings))


def decode(body: bytes, content_type: str | None = None) -> Decoded:
    """Decode a fetched feed body and repair its text (repair_text); never raises (undecodable bytes
    become U+FFFD or windows-1252)."""
    return repair_text(_decode(body, content_type))


def _decode(body: bytes, content_type: str | None) -> Decoded:
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return _decode_as(body[len(bom) :], bom_codec, [])
    wide = _utf16_without_bom(body[:64])
    if wide:
        return _decode_as(body, wide, [])

    warnings: list[str] = []
    declared_match = _XML_DECL_ENCODING.match(body, 0, 1024)
    declared = declared_match.group(1).decode("ascii") if declared_match else None
    http_match = _HTTP_CHARSET.search(content_type or "")
    codec = label = None
    for label, source in (
        (declared, "XML declaration"),
        (http_match and http_match.group(1), "HTTP charset"),
    ):
        codec = _codec(label)
        if codec and codec.startswith(("utf-16", "utf-32")):
            # The label was readable as ASCII, so the document cannot be in a 16/32-bit encoding.
            warnings.append(f"{source} says {label} but the document is 8-bit; ignored")
            codec = None
        elif label and not codec:
            warnings.append(f"unknown encoding {label!r} in {source}; ignored")
        if codec:
            break

    if codec in _SEVEN_BIT:
        return _decode_as(body, codec, warnings)
    if body.isascii():
        return Decoded(body.decode("ascii"), body, codec or "utf-8", tuple(warnings))
    if codec is None or _is_single_byte(codec):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if codec is not None:
                warnings.append(f"declared {label} but the bytes are valid UTF-8; decoded as UTF-8")
            return Decoded(text, body, "utf-8", tuple(warnings))
    if codec is None:
        codec = _detect(body)
        if codec != "utf-8":
            warnings.append(f"no encoding declared and the bytes are not UTF-8; detected {codec}")
    return _decode_as(body, codec, warnings)
