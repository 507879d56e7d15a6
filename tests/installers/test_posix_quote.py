"""POSIX quoting without shlex gives shlex.quote's words."""

from __future__ import annotations

import random
import shlex
import string

import pytest

from torchenv.installers.commands import posix_quote

WORDS = ["", "plain", "torch==2.7.1", "https://download.pytorch.org/whl/cu128", "a b", "it's",
         "'", "''", "$HOME", "`x`", "a;b", "~", "=x", "x=y", "-x", "@%+=:,./-_", "tab\t",
         "new\nline", "é", "日本", "١٢٣", "a*b", "[x]", "{x}", "!", "#", "\\"]


@pytest.mark.parametrize("word", WORDS)
def test_words_are_quoted_as_shlex_quotes_them(word: str) -> None:
    assert posix_quote(word) == shlex.quote(word)


def test_random_words_are_quoted_as_shlex_quotes_them() -> None:
    rng = random.Random(7)
    alphabet = string.printable + "éß日\u00a0\u2018"
    for _ in range(5000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        assert posix_quote(word) == shlex.quote(word), word
