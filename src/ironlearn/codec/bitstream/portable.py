"""``exp`` and ``log`` that give the same float64 on every machine and in every language.

The entropy model's scales are ``exp`` of a number (:mod:`.entropy`), and the range coder turns
each scale into probabilities, so an encoder and a decoder must compute every scale to the bit.
The C library's ``exp`` and ``log`` (Python's :mod:`math`) are only accurate to about an ulp, each
library rounding its own way: glibc, macOS, Windows and a browser's ``Math.exp`` differ now and
then in the last bit.  These use only what IEEE 754 rounds exactly, ``+ - * /``, one at a time
in a fixed order, and exact scaling by powers of two, so they agree wherever float64 does: the
page's decoder (``viewer/static/ilcdecode.js``) follows the same steps.  Accurate to about 2
ulps, which is all a scale needs; from format 6 on, files use them (:func:`for_version`).
"""

from __future__ import annotations

import math

#: ln 2 in two parts, the first with its low bits zero (fdlibm's), so that ``k * LN2_HI`` is exact.
LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
INV_LN2 = 1.44269504088896338700e+00
#: Taylor's coefficients 1/n! of exp on |r| <= ln(2)/2 (the 14th term is under 1e-17 of the sum).
EXP_TERMS = tuple(1 / math.factorial(n) for n in range(14))
#: log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172 for m in [sqrt(1/2), sqrt(2)): the
#: odd terms s^(2n+1) / (2n+1) to n = 11 (the next is under 1e-18 of the sum).
LOG_TERMS = tuple(1 / (2 * n + 1) for n in range(12))
SQRT_HALF = 0.7071067811865476
#: The first version whose files compute their scales with these (:func:`for_version`).
SINCE_VERSION = 6


def exp(x: float) -> float:
    """e**x for |x| up to 700, the same float64 everywhere."""
    k = math.floor(x * INV_LN2 + 0.5)
    r = (x - k * LN2_HI) - k * LN2_LO  # |r| <= ln(2)/2 (and a little)
    total = EXP_TERMS[-1]
    for term in reversed(EXP_TERMS[:-1]):
        total = total * r + term
    return math.ldexp(total, k)  # exact


def log(x: float) -> float:
    """The natural logarithm of ``x`` > 0 (a normal float64), the same float64 everywhere."""
    m, e = math.frexp(x)  # x = m * 2**e, m in [0.5, 1), both exact
    if m < SQRT_HALF:
        m, e = 2 * m, e - 1  # exact: m in [sqrt(1/2), sqrt(2))
    s = (m - 1) / (m + 1)
    s2 = s * s
    total = LOG_TERMS[-1]
    for term in reversed(LOG_TERMS[:-1]):
        total = total * s2 + term
    return e * LN2_HI + (e * LN2_LO + 2 * s * total)


#: What files written now use.
CURRENT = (exp, log)


def for_version(version: int):
    """``(exp, log)`` of the files of format ``version``: the C library's before
    :data:`SINCE_VERSION` (as they were written), these from it on."""
    return (exp, log) if version >= SINCE_VERSION else (math.exp, math.log)
