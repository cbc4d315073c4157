"""The registry of enabled evidence sources. Only zero-cost sources may be enabled (the validator
refuses any other), each with the rate limit its API documents."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from forum_atlas.evidence.connectors import (
    clinicaltrials,
    crossref,
    dailymed,
    europepmc,
    medlineplus,
    openalex,
    openfda,
    pmc,
    pubmed,
)
from forum_atlas.evidence.connectors.base import Connector, SourceSpec
from forum_atlas.evidence.connectors.http import SourceHttp

SPECS: dict[str, SourceSpec] = {spec.name: spec for spec in (
    pubmed.SPEC, pubmed.COCHRANE_SPEC, pmc.SPEC, europepmc.SPEC, openalex.SPEC, clinicaltrials.SPEC, openfda.SPEC,
    crossref.SPEC, dailymed.SPEC, medlineplus.SPEC)}
DEFAULT_SOURCES = ("pubmed", "europepmc", "openalex", "clinicaltrials", "openfda")
# Raise when a connector's parser changes what it makes of the same answer: cached answers of the
# old parsers then stop matching (source_version is part of the provider cache's key).
PARSER_VERSION = "evidence-parsers 1"


class RegistryError(ValueError):
    pass


def validate_sources(specs: Iterable[SourceSpec]) -> list[SourceSpec]:
    specs = list(specs)
    costly = [f"{s.name} (cost {s.cost!r})" for s in specs if s.cost != "zero"]
    if costly:
        raise RegistryError(f"only zero-cost sources may be enabled; refused: {', '.join(costly)}")
    bad = [s.name for s in specs if s.rate_per_s <= 0 or s.timeout_s <= 0]
    if bad:
        raise RegistryError(f"sources need a positive rate limit and timeout: {', '.join(bad)}")
    return specs


def build_connectors(names: Iterable[str], *, base_urls: Mapping[str, str] | None = None,
                     timeouts_s: Mapping[str, float] | None = None, attempts: int | None = None,
                     base_delay_s: float = 0.5, sleep: Callable[[float], None] = time.sleep,
                     specs: Mapping[str, SourceSpec] = SPECS) -> dict[str, Connector]:
    """Connectors for `names`; `base_urls` overrides a source's address (key 'pmc-oa' for the PMC OA service)."""
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise RegistryError(f"unknown evidence source(s): {', '.join(unknown)}; known: {', '.join(sorted(specs))}")
    urls, timeouts = dict(base_urls or {}), dict(timeouts_s or {})
    enabled = validate_sources(specs[n] for n in names)

    def client(spec: SourceSpec, key: str, default_url: str) -> SourceHttp:
        return SourceHttp(spec.name, urls.get(key, default_url), timeout_s=timeouts.get(spec.name, spec.timeout_s),
                          rate_per_s=spec.rate_per_s, attempts=attempts or spec.attempts,
                          base_delay_s=base_delay_s, max_delay_s=timeouts.get(spec.name, spec.timeout_s), sleep=sleep)

    built: dict[str, Connector] = {}
    for spec in enabled:
        http = client(spec, spec.name, spec.base_url)
        if spec.name == "pmc":
            built[spec.name] = pmc.PmcConnector(http, client(spec, "pmc-oa", pmc.OA_BASE_URL))
        elif spec.name == "cochrane":
            built[spec.name] = pubmed.cochrane(http)
        else:
            factory = {"pubmed": pubmed.PubMedConnector, "europepmc": europepmc.EuropePmcConnector,
                       "openalex": openalex.OpenAlexConnector, "clinicaltrials": clinicaltrials.ClinicalTrialsConnector,
                       "openfda": openfda.OpenFdaConnector, "crossref": crossref.CrossrefConnector,
                       "dailymed": dailymed.DailyMedConnector,
                       "medlineplus": medlineplus.MedlinePlusConnector}[spec.name]
            built[spec.name] = factory(http, spec)
    return built


def http_clients(connector: Connector) -> list[SourceHttp]:
    """The connector's HTTP clients (PMC has two: E-utilities and the OA service)."""
    return [http for http in (connector.http, getattr(connector, "oa_http", None)) if http is not None]


def source_version(connector: Connector) -> str:
    """What answered: the endpoint(s) and the parsers' version. Part of the provider cache's key, so
    a mirror or a parser change never serves another version's answer."""
    return " + ".join(http.base_url for http in http_clients(connector)) + f" ({PARSER_VERSION})"


def outbound_log(connectors: Mapping[str, Connector]) -> list[str]:
    """Every request the connectors' HTTP clients sent, in order per client."""
    return [line for connector in connectors.values() for http in http_clients(connector) for line in http.sent]
