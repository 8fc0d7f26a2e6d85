"""benchmarks/sdk_transport.py: the SDK-transport backend throughput.py
measures takes its one argument beside the openai backend's."""
from __future__ import annotations

import pytest

from avhb import UserError, parse_backend_spec
from benchmarks.sdk_transport import SdkOpenAIBackend

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize("http", ["httpx", "aiohttp"])
def test_sdk_http_is_a_declared_argument(http):
    backend = SdkOpenAIBackend(parse_backend_spec(f"openai_sdk:m,base_url={URL},sdk_http={http}"))
    assert backend.sdk_http == http
    assert backend.describe()["runtime"]["transport"] == f"openai SDK ({http})"


def test_an_unknown_sdk_http_and_an_unknown_argument_are_refused():
    with pytest.raises(UserError, match="sdk_http='curl': use httpx or aiohttp"):
        SdkOpenAIBackend(parse_backend_spec(f"openai_sdk:m,base_url={URL},sdk_http=curl"))
    with pytest.raises(UserError, match=r"unknown argument\(s\) sdk_htp .*sdk_http"):
        SdkOpenAIBackend(parse_backend_spec(f"openai_sdk:m,base_url={URL},sdk_htp=aiohttp"))
