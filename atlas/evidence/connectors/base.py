"""The connector interface, and the parsing helpers every connector shares."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from forum_atlas.evidence.connectors.http import SourceHttp
from forum_atlas.evidence.model import EvidenceItem, EvidenceQuery
from forum_atlas.providers import ProviderBadResponse


@dataclass(frozen=True)
class SourceSpec:
    """A source as the registry knows it. `rate_per_s` is the limit the API documents for keyless use."""

    name: str
    base_url: str
    rate_per_s: float
    rate_doc: str            # where the limit comes from
    cost: str = "zero"       # the registry refuses anything else
    timeout_s: float = 10.0
    attempts: int = 3


class Connector(Protocol):
    spec: SourceSpec
    http: SourceHttp

    def search(self, query: EvidenceQuery) -> list[EvidenceItem]:
        """Items for the query; [] for a genuine zero-hit answer. Failures raise typed provider errors."""
        ...


def parse_xml(source: str, text: str, where: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise ProviderBadResponse(source, f"{where}: not XML: {exc}") from exc


def parse_root(source: str, text: str, where: str, tag: str) -> ET.Element:
    """The answer's root element, which must be `tag`."""
    root = parse_xml(source, text, where)
    expect(source, root.tag == tag, f"{where}: unexpected root <{root.tag}>")
    return root


def parse_records(source: str, text: str, where: str, root_tag: str, record_tag: str,
                  parse_record: Callable[[str, ET.Element], EvidenceItem]) -> list[EvidenceItem]:
    """An efetch-style answer (PubMed, PMC): one item per record element under the checked root."""
    return [parse_record(source, record) for record in parse_root(source, text, where, root_tag).iterfind(record_tag)]


def text_of(element: ET.Element | None) -> str:
    """All text inside an element (mixed content such as <i>…</i> included), whitespace collapsed."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def expect(source: str, condition: bool, detail: str) -> None:
    if not condition:
        raise ProviderBadResponse(source, detail)
