"""The win-rate matrix's shades (hub/static/app.css): ten of them, each with its text colour, every pair readable
by WCAG 2's contrast formula (at least 4.5:1), and the shades ordered from darkest orange through light to darkest
purple, so the number in a cell is always legible and the colour only repeats what the number says."""

from __future__ import annotations

import re

from hub.web.templating import STATIC

RULE = re.compile(r"\.heat-(\d) \{ background: #([0-9a-f]{6}); color: #([0-9a-f]{3,6}); \}")


def _luminance(hex_colour: str) -> float:
    if len(hex_colour) == 3:
        hex_colour = "".join(c * 2 for c in hex_colour)
    channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_shade_keeps_its_number_readable():
    shades = {int(n): (background, text) for n, background, text in RULE.findall((STATIC / "app.css").read_text())}
    assert sorted(shades) == list(range(10))
    for shade, (background, text) in shades.items():
        assert _contrast(background, text) >= 4.5, (shade, background, text)
    lightness = [_luminance(shades[n][0]) for n in range(10)]
    assert lightness[0] < lightness[2] < lightness[4] and lightness[5] > lightness[7] > lightness[9]  # diverging
    assert _contrast("fff", "000") == 21.0  # the formula itself, on its known extreme
