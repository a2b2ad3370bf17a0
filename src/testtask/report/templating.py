"""The Jinja environment of the report's page: the templates of report/templates/, every value escaped.

A user's own claims file (conf/user/claims/) reaches the page, so escaping is the environment's default rather
than a call each value must remember; a template marks nothing as safe.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

TEMPLATES = "templates"  # the folder of report/ that holds the templates (shipped as package data)


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("testtask.report", TEMPLATES),
        # every template here writes HTML (or CSS inside it), so escaping does not hang on a file's extension
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a misspelt name fails the build instead of leaving a blank cell
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
