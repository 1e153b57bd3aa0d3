"""Kubernetes resource quantities (``96``, ``500m``, ``1536Gi``, ``1e3``) as exact decimals, without a client.

The grammar is apimachinery's ``resource.Quantity``: a signed decimal, then a binary suffix (Ki..Ei), a
decimal suffix (n, u, m, k, M, G, T, P, E) or a decimal exponent (e3, E-2).
"""

from __future__ import annotations

import re
from decimal import Decimal

MAX_QUANTITY_CHARS = 64
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?\d{1,3}))?"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str) -> Decimal:
    """The exact value of a quantity; ValueError (naming the limit when it is too long) otherwise."""
    if len(text) > MAX_QUANTITY_CHARS:
        raise ValueError(f"a quantity has at most {MAX_QUANTITY_CHARS} characters")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    number = Decimal(match["number"])
    if match["binary"]:
        return number * (1024 ** _BINARY[match["binary"]])
    if match["decimal"]:
        return number.scaleb(_DECIMAL[match["decimal"]])
    if match["exponent"]:
        return number.scaleb(int(match["exponent"]))
    return number
