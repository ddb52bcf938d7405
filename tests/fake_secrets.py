"""The credentials the redaction and cassette tests plant, built when the tests run, so that no
tracked file holds a string shaped like a real API key (a secret scanner would flag one)."""
from __future__ import annotations


def fake_key(body: str) -> str:
    """An OpenAI-style key ``sk-<body>`` that no service issued."""
    return "-".join(("sk", body))
