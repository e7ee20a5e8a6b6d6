"""The OWASP XSS filter-evasion vectors through sanitize_html: none survives.

Judged on the DOM a browser-like parser builds from the output (lxml.html), not on substrings: no
dangerous element, no event handler or style attribute, and every URL-bearing attribute, once decoded the
way a browser decodes it (entities, then control characters and whitespace dropped), is http(s) or mailto.
"""

from __future__ import annotations

import html
import re

import pytest
from lxml import html as lxml_html

from modules.rss.parse.sanitize import sanitize_html

BASE = "https://blog.example.com/posts/entry.html"
# After OWASP's XSS Filter Evasion Cheat Sheet (and the classic RSnake list it grew from).
VECTORS = [
    "<SCRIPT SRC=http://xss.rocks/xss.js></SCRIPT>",
    "javascript:/*--></title></style></textarea></script></xmp><svg/onload='+/\"/+/onmouseover=1/+/[*/[]/+alert(1)//'>",
    "<IMG SRC=\"javascript:alert('XSS');\">",
    "<IMG SRC=javascript:alert('XSS')>",
    "<IMG SRC=JaVaScRiPt:alert('XSS')>",
    "<IMG SRC=`javascript:alert(\"RSnake says, 'XSS'\")`>",
    '<a onmouseover="alert(document.cookie)">xxs link</a>',
    "<a onmouseover=alert(document.cookie)>xxs link</a>",
    '<IMG """><SCRIPT>alert("XSS")</SCRIPT>">',
    "<IMG SRC=javascript:alert(String.fromCharCode(88,83,83))>",
    "<IMG SRC=# onmouseover=\"alert('xxs')\">",
    "<IMG SRC= onmouseover=\"alert('xxs')\">",
    "<IMG onmouseover=\"alert('xxs')\">",
    '<IMG SRC=/ onerror="alert(String.fromCharCode(88,83,83))"></img>',
    '<img src=x onerror="&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041">',
    "<IMG SRC=&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;&#97;&#108;&#101;&#114;&#116;&#40;&#39;&#88;&#83;&#83;&#39;&#41;>",
    "<IMG SRC=&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041>",
    "<IMG SRC=&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A&#x61&#x6C&#x65&#x72&#x74&#x28&#x27&#x58&#x53&#x53&#x27&#x29>",
    "<IMG SRC=\"jav\tascript:alert('XSS');\">",
    "<IMG SRC=\"jav&#x09;ascript:alert('XSS');\">",
    "<IMG SRC=\"jav&#x0A;ascript:alert('XSS');\">",
    "<IMG SRC=\"jav&#x0D;ascript:alert('XSS');\">",
    "<IMG SRC=\"jav\x00ascript:alert('XSS');\">",
    "<IMG SRC=\" &#14;  javascript:alert('XSS');\">",
    '<SCRIPT/XSS SRC="http://xss.rocks/xss.js"></SCRIPT>',
    '<BODY onload!#$%&()*~+-_.,:;?@[/|\\]^`=alert("XSS")>',
    '<SCRIPT/SRC="http://xss.rocks/xss.js"></SCRIPT>',
    '<<SCRIPT>alert("XSS");//\\<</SCRIPT>',
    "<SCRIPT SRC=http://xss.rocks/xss.js?< B >",
    "<SCRIPT SRC=//xss.rocks/.j>",
    "<IMG SRC=\"`<javascript:alert>`('XSS')\"",
    "<iframe src=http://xss.rocks/scriptlet.html <",
    '</TITLE><SCRIPT>alert("XSS");</SCRIPT>',
    '<INPUT TYPE="IMAGE" SRC="javascript:alert(\'XSS\');">',
    "<BODY BACKGROUND=\"javascript:alert('XSS')\">",
    "<IMG DYNSRC=\"javascript:alert('XSS')\">",
    "<IMG LOWSRC=\"javascript:alert('XSS')\">",
    "<STYLE>li {list-style-image: url(\"javascript:alert('XSS')\");}</STYLE><UL><LI>XSS</br>",
    "<IMG SRC='vbscript:msgbox(\"XSS\")'>",
    "<svg/onload=alert('XSS')>",
    "<svg><script>alert(1)</script></svg>",
    '<svg><a xlink:href="javascript:alert(1)"><text x="20" y="20">XSS</text></a></svg>',
    "<BODY ONLOAD=alert('XSS')>",
    "<BGSOUND SRC=\"javascript:alert('XSS');\">",
    "<BR SIZE=\"&{alert('XSS')}\">",
    '<LINK REL="stylesheet" HREF="javascript:alert(\'XSS\');">',
    "<STYLE>@import'http://xss.rocks/xss.css';</STYLE>",
    '<META HTTP-EQUIV="Link" Content="<http://xss.rocks/xss.css>; REL=stylesheet">',
    '<STYLE>BODY{-moz-binding:url("http://xss.rocks/xssmoz.xml#xss")}</STYLE>',
    "<IMG STYLE=\"xss:expr/*XSS*/ession(alert('XSS'))\">",
    'exp/*<A STYLE=\'no\\xss:noxss("*//*");xss:ex/*XSS*//*/*/pression(alert("XSS"))\'>',
    "<STYLE TYPE=\"text/javascript\">alert('XSS');</STYLE>",
    "<STYLE>.XSS{background-image:url(\"javascript:alert('XSS')\");}</STYLE><A CLASS=XSS></A>",
    '<STYLE type="text/css">BODY{background:url("javascript:alert(\'XSS\')")}</STYLE>',
    '<XSS STYLE="behavior: url(xss.htc);">',
    '<META HTTP-EQUIV="refresh" CONTENT="0;url=javascript:alert(\'XSS\');">',
    '<META HTTP-EQUIV="refresh" CONTENT="0;url=data:text/html base64,PHNjcmlwdD5hbGVydCgnWFNTJyk8L3NjcmlwdD4K">',
    "<IFRAME SRC=\"javascript:alert('XSS');\"></IFRAME>",
    '<IFRAME SRC=# onmouseover="alert(document.cookie)"></IFRAME>',
    "<FRAMESET><FRAME SRC=\"javascript:alert('XSS');\"></FRAMESET>",
    "<TABLE BACKGROUND=\"javascript:alert('XSS')\">",
    "<TABLE><TD BACKGROUND=\"javascript:alert('XSS')\">",
    "<DIV STYLE=\"background-image: url(javascript:alert('XSS'))\">",
    "<DIV STYLE=\"background-image:\\0075\\0072\\006C\\0028'\\006a\\0061\\0076\\0061\\0073\\0063\\0072\\0069\\0070\\0074\\003a\\0061\\006c\\0065\\0072\\0074\\0028.1027\\0058.1053\\0053\\0027\\0029'\\0029\">",
    "<DIV STYLE=\"width: expression(alert('XSS'));\">",
    "<BASE HREF=\"javascript:alert('XSS');//\">",
    '<OBJECT TYPE="text/x-scriptlet" DATA="http://xss.rocks/scriptlet.html"></OBJECT>',
    '<EMBED SRC="data:image/svg+xml;base64,PHN2ZyB4bWxuczpzdmc9Imh0dH A6Ly93d3cudzMub3JnLzIwMDAvc3ZnIiB4bWxucz0iaHR0cDovL3d3dy53My5vcmcv MjAwMC9zdmciIHhtbG5zOnhsaW5rPSJodHRwOi8vd3d3LnczLm9yZy8xOTk5L3hs aW5rIiB2ZXJzaW9uPSIxLjAiIHg9IjAiIHk9IjAiIHdpZHRoPSIxOTQiIGhlaWdodD0iMjAw IiBpZD0ieHNzIj48c2NyaXB0IHR5cGU9InRleHQvZWNtYXNjcmlwdCI+YWxlcnQoIlh TUyIpOzwvc2NyaXB0Pjwvc3ZnPg==" type="image/svg+xml" AllowScriptAccess="always"></EMBED>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    '<a href="&#x64;ata:text/html,<script>alert(1)</script>">x</a>',
    '<a href="vbscript&colon;msgbox(1)">x</a>',
    '<a href="javascript&colon;alert(1)">x</a>',
    '<a href="&#1;javascript:alert(1)">x</a>',
    '<a href="java\nscript:alert(1)">x</a>',
    '<a href="  &#x20;javascript:alert(1)">x</a>',
    '<a href="jav&#x61;script:alert(1)">x</a>',
    '<a href="javascript&#x3A;alert(1)">x</a>',
    '<SCRIPT>document.write("<SCRI");</SCRIPT>PT SRC="httx://xss.rocks/xss.js"></SCRIPT>',
    '<SCRIPT a=">" SRC="httx://xss.rocks/xss.js"></SCRIPT>',
    '<SCRIPT ="blah" SRC="httx://xss.rocks/xss.js"></SCRIPT>',
    "<DIV><![CDATA[<]]>script>alert(1)<![CDATA[<]]>/script></DIV>",
    "<!--[if gte IE 4]><SCRIPT>alert('XSS');</SCRIPT><![endif]-->",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    '<form><button formaction="javascript:alert(1)">x</button></form>',
    "<details open ontoggle=alert(1)>",
    '<video><source onerror="alert(1)"></video>',
    "<audio src=x onerror=alert(1)>",
    '<img srcset="javascript:alert(1) 1x">',
    '<a href="https://ok.example/" ping="https://evil.example/">x</a>',
    '<object data="javascript:alert(1)"></object>',
    "<isindex type=image src=1 onerror=alert(1)>",
    "<template><script>alert(1)</script></template>",
    "<plaintext><script>alert(1)</script>",
]
DANGEROUS_TAGS = {
    "script", "style", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math", "link",
    "meta", "base", "form", "input", "button", "textarea", "select", "bgsound", "xss", "template",
    "isindex", "noscript", "video", "audio", "source", "plaintext",
}  # fmt: skip
URL_ATTRIBUTES = {
    "href", "src", "action", "formaction", "background", "dynsrc", "lowsrc", "data", "srcset", "poster",
    "xlink:href", "cite", "longdesc", "ping", "codebase",
}  # fmt: skip
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]+")  # browsers drop these inside a URL scheme


def scheme_of(value: str) -> str:
    decoded = _INVISIBLE.sub("", html.unescape(value)).lower()
    match = re.match(r"([a-z][a-z0-9+.-]*):", decoded)
    return match[1] if match else ""


def test_the_vector_list_is_substantial() -> None:
    assert len(VECTORS) >= 60 and len(set(VECTORS)) == len(VECTORS)


@pytest.mark.parametrize("vector", VECTORS)
def test_no_vector_survives_sanitization(vector: str) -> None:
    clean = sanitize_html(vector, BASE)
    if not clean.strip():
        return
    root = lxml_html.fragment_fromstring(clean, create_parent="div")
    for el in root.iter():
        if not isinstance(el.tag, str):  # comments, processing instructions
            raise AssertionError(f"non-element node survived: {clean!r}")
        assert el.tag.lower() not in DANGEROUS_TAGS, (el.tag, clean)
        for name, value in el.attrib.items():
            name = name.lower()
            assert not name.startswith("on"), (name, clean)
            assert name not in ("style", "class", "id", "srcdoc"), (name, clean)
            if name in URL_ATTRIBUTES:
                assert scheme_of(value) in ("http", "https", "mailto"), (name, value, clean)
    # What survives as text is inert: escaped, so it never regains markup when the output is re-parsed.
    assert "<script" not in clean.lower() and "<svg" not in clean.lower()
