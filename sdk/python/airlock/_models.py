"""Values of the SDK's own that are not schemas of the API document: what
the streams of exec and process output yield."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Output:
    """A piece of a command's output as it came. offset is where it
    starts in the command's output, both streams counted together: a
    reader that lost its stream resumes at offset + len(data)."""

    stream: Literal["stdout", "stderr"]
    data: bytes
    offset: int

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")
