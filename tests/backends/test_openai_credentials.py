"""The OpenAI backend's own credentials (model_backends/openai_backend.py):
the password of a URL it takes from the environment (``OPENAI_BASE_URL``,
which no argument holds) joins the run's secrets when it is built, and
``split_userinfo`` on the URLs a user may write."""
from __future__ import annotations

import base64

import pytest

from avhb.errors import UserError
from avhb.model.backend import parse_backend_spec
from avhb.model_backends.openai_backend import OpenAIBackend, split_userinfo
from avhb.redact import MASK, redact_text, secrets


def test_a_password_from_the_environments_url_is_kept_out_of_files(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://envuser:env-pass-5150@127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = OpenAIBackend(parse_backend_spec("openai:m"))
    assert backend.base_url == "http://127.0.0.1:9/v1"
    known = secrets()
    assert "env-pass-5150" in known and base64.b64encode(b"envuser:env-pass-5150").decode() in known
    assert "envuser" not in known  # the user name is no secret
    assert redact_text("echo env-pass-5150") == f"echo {MASK}"


def test_a_key_named_by_api_key_env_is_kept_out_of_files(monkeypatch):
    monkeypatch.setenv("GATEWAY_CRED", "gw-cred-value-31")  # a name redaction would not guess
    OpenAIBackend(parse_backend_spec("openai:m,base_url=http://127.0.0.1:9/v1,api_key_env=GATEWAY_CRED"))
    assert "gw-cred-value-31" in secrets()


@pytest.mark.parametrize("url, expected", [
    ("http://h:9/v1", ("http://h:9/v1", None)),
    ("http://u:p%40ss@h:9/v1", ("http://h:9/v1", ("u", "p@ss"))),
    ("http://tok3n@h:9/v1", ("http://h:9/v1", ("tok3n", ""))),  # a user alone: Basic with an empty password
    ("https://:only-pw@h/v1", ("https://h/v1", ("", "only-pw"))),
    ("http://u:p@[::1]:9/v1", ("http://[::1]:9/v1", ("u", "p"))),
])
def test_userinfo_taken_out_of_the_url(url, expected):
    assert split_userinfo(url) == expected


def test_a_bad_port_is_one_line_without_the_password():
    with pytest.raises(UserError) as failed:
        split_userinfo("http://u:s3cret-pw@h:port/v1")
    assert str(failed.value) == "base_url has a bad port: http://u:***@h:port/v1"
