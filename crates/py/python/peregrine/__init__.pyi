"""Type stubs of the `peregrine` package (see `__init__.py` for the docs)."""

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pandas as pd

PathLike = Union[str, Path]

class ScenarioError(ValueError):
    """An invalid scenario; `field` is the dotted path of the bad field."""

    field: str
    origin: str
    reason: str

def controllers() -> List[str]: ...
def schedulers() -> List[str]: ...
def experiments() -> List[str]: ...

class Scenario:
    @staticmethod
    def from_file(path: PathLike, set: Optional[Mapping[str, Any]] = ...) -> Scenario: ...
    @staticmethod
    def from_dict(
        doc: Mapping[str, Any],
        set: Optional[Mapping[str, Any]] = ...,
        base_dir: Optional[PathLike] = ...,
    ) -> Scenario: ...
    @staticmethod
    def from_toml(
        text: str,
        set: Optional[Mapping[str, Any]] = ...,
        base_dir: Optional[PathLike] = ...,
    ) -> Scenario: ...
    def with_set(self, set: Mapping[str, Any]) -> Scenario: ...
    def to_toml(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    @property
    def name(self) -> str: ...
    @property
    def origin(self) -> str: ...
    def run(self, progress: bool = ...) -> Results: ...

class Results:
    @property
    def summary(self) -> Dict[str, Any]: ...
    @property
    def events(self) -> int: ...
    @property
    def flows(self) -> pd.DataFrame: ...
    @property
    def links(self) -> pd.DataFrame: ...
    @property
    def messages(self) -> pd.DataFrame: ...
    @property
    def timeseries(self) -> pd.DataFrame: ...
    @property
    def stream_timeseries(self) -> pd.DataFrame: ...
    @property
    def link_timeseries(self) -> pd.DataFrame: ...
    def table(self) -> str: ...
    def write(self, out_dir: PathLike) -> Path: ...

class Sweep:
    backend: str
    wall_s: float
    @property
    def runs(self) -> pd.DataFrame: ...
    @property
    def labels(self) -> List[str]: ...
    @property
    def grid(self) -> Dict[str, List[Any]]: ...
    @property
    def seeds(self) -> int: ...
    @property
    def base_seed(self) -> int: ...
    @property
    def summaries(self) -> List[Dict[str, Any]]: ...
    def aggregate(self) -> pd.DataFrame: ...
    def write_parquet(self, path: PathLike) -> Path: ...

def sweep(
    scenario: Scenario,
    grid: Optional[Mapping[str, Sequence[Any]]] = ...,
    seeds: Optional[int] = ...,
    backend: str = ...,
    ray_address: Optional[str] = ...,
    progress: bool = ...,
    threads: int = ...,
    ray_cpus: int = ...,
) -> Sweep: ...

class Reproduction:
    name: str
    summary: Dict[str, Any]
    dir: Path
    report: Path

def reproduce(
    name: str,
    quick: bool = ...,
    seeds: Optional[int] = ...,
    out: PathLike = ...,
    threads: int = ...,
    progress: bool = ...,
    tiny: bool = ...,
) -> Reproduction: ...
