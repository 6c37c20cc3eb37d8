"""Demo MCP server: currency conversion, stock quotes and personal-finance maths.

Exchange rates and stock quotes come from fixed built-in tables (illustrative
values, not live market data), so every result is deterministic and no
network access is needed. Run over stdio with:

    python examples/servers/finance.py
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP(
    "finance",
    instructions="Currency conversion, exchange rates, stock quotes, loan/interest maths and tax estimates "
    "(static demo data, not live prices or financial advice)",
)

AS_OF = "2025-06-06"

# Units of each currency per 1 USD.
USD_RATES: dict[str, float] = {
    "USD": 1.0,
    "EUR": 0.877,
    "GBP": 0.739,
    "JPY": 144.85,
    "CHF": 0.822,
    "CAD": 1.368,
    "AUD": 1.537,
    "NZD": 1.657,
    "CNY": 7.185,
    "INR": 85.62,
    "MXN": 19.17,
    "BRL": 5.57,
    "SEK": 9.59,
    "NOK": 10.09,
    "SGD": 1.287,
    "HKD": 7.849,
    "KRW": 1357.2,
    "ZAR": 17.78,
}

# symbol -> (company name, exchange, last price, previous close) in USD.
QUOTES: dict[str, tuple[str, str, float, float]] = {
    "AAPL": ("Apple Inc.", "NASDAQ", 203.92, 200.63),
    "MSFT": ("Microsoft Corporation", "NASDAQ", 470.38, 467.68),
    "GOOGL": ("Alphabet Inc. Class A", "NASDAQ", 173.68, 168.05),
    "AMZN": ("Amazon.com, Inc.", "NASDAQ", 213.57, 207.91),
    "NVDA": ("NVIDIA Corporation", "NASDAQ", 141.72, 139.99),
    "META": ("Meta Platforms, Inc.", "NASDAQ", 697.71, 684.62),
    "TSLA": ("Tesla, Inc.", "NASDAQ", 295.14, 284.70),
    "JPM": ("JPMorgan Chase & Co.", "NYSE", 265.73, 262.60),
    "V": ("Visa Inc.", "NYSE", 354.13, 362.83),
    "KO": ("The Coca-Cola Company", "NYSE", 71.05, 71.73),
}

FilingStatus = Literal["single", "married_joint", "married_separate", "head_of_household"]

# US federal 2024 tax year: standard deduction and bracket upper bounds.
STANDARD_DEDUCTION: dict[str, float] = {
    "single": 14_600,
    "married_joint": 29_200,
    "married_separate": 14_600,
    "head_of_household": 21_900,
}
BRACKET_RATES = [0.10, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37]
BRACKET_LIMITS: dict[str, list[float]] = {
    "single": [11_600, 47_150, 100_525, 191_950, 243_725, 609_350],
    "married_joint": [23_200, 94_300, 201_050, 383_900, 487_450, 731_200],
    "married_separate": [11_600, 47_150, 100_525, 191_950, 243_725, 365_600],
    "head_of_household": [16_550, 63_100, 100_500, 191_950, 243_700, 609_350],
}

CurrencyArg = Annotated[str, Field(description="ISO 4217 currency code, e.g. 'USD', 'EUR', 'JPY'.")]
Money = Annotated[float, Field(ge=0, description="Amount of money (non-negative).")]
RatePct = Annotated[float, Field(ge=0, le=100, description="Annual interest rate in percent, e.g. 6.5.")]
Years = Annotated[float, Field(gt=0, le=100, description="Duration in years (may be fractional).")]


def _currency(code: str) -> str:
    key = code.strip().upper()
    if key not in USD_RATES:
        if not re.fullmatch(r"[A-Z]{3}", key):
            raise ValueError(f"Invalid currency code {code!r}; expected a 3-letter ISO 4217 code like 'EUR'.")
        raise ValueError(f"Unsupported currency {key}. Supported: {', '.join(sorted(USD_RATES))}.")
    return key


def _symbol(symbol: str) -> str:
    key = symbol.strip().upper()
    if key not in QUOTES:
        raise ValueError(f"Unknown ticker symbol {symbol!r}. Available: {', '.join(sorted(QUOTES))}.")
    return key


@mcp.tool
def convert_currency(amount: Money, from_currency: CurrencyArg, to_currency: CurrencyArg) -> dict[str, Any]:
    """Convert an amount between two currencies using the built-in reference rates.

    Returns the converted amount (rounded to 2 decimals), the exchange rate
    applied and the date of the rate snapshot.
    """
    src, dst = _currency(from_currency), _currency(to_currency)
    rate = USD_RATES[dst] / USD_RATES[src]
    return {
        "amount": amount,
        "from": src,
        "to": dst,
        "rate": round(rate, 6),
        "converted": round(amount * rate, 2),
        "as_of": AS_OF,
    }


@mcp.tool
def get_exchange_rates(
    base: Annotated[str, Field(description="ISO 4217 code of the base currency, e.g. 'EUR'.")] = "USD",
) -> dict[str, Any]:
    """Get reference exchange rates for all supported currencies against a base currency.

    Returns a mapping of currency code to units of that currency per 1 unit of
    the base currency, plus the snapshot date.
    """
    b = _currency(base)
    rates = {code: round(r / USD_RATES[b], 6) for code, r in sorted(USD_RATES.items()) if code != b}
    return {"base": b, "as_of": AS_OF, "rates": rates}


@mcp.tool
def get_stock_quote(
    symbol: Annotated[str, Field(description="Ticker symbol, e.g. 'AAPL' or 'MSFT'.")],
) -> dict[str, Any]:
    """Get a stock quote (static snapshot) with last price, previous close and change in USD and percent."""
    sym = _symbol(symbol)
    name, exchange, price, prev = QUOTES[sym]
    return {
        "symbol": sym,
        "name": name,
        "exchange": exchange,
        "currency": "USD",
        "price": price,
        "previous_close": prev,
        "change": round(price - prev, 2),
        "change_percent": round((price - prev) / prev * 100, 2),
        "as_of": AS_OF,
    }


@mcp.tool
def calculate_loan_payment(principal: Money, annual_rate_percent: RatePct, years: Years) -> dict[str, Any]:
    """Calculate the fixed monthly payment of an amortizing loan (e.g. a mortgage).

    Returns the monthly payment, the number of payments, and the total amount
    paid and total interest over the life of the loan.
    """
    n = round(years * 12)
    if n < 1:
        raise ValueError("Loan term must be at least one month.")
    r = annual_rate_percent / 100 / 12
    payment = principal / n if r == 0 else principal * r / (1 - (1 + r) ** -n)
    return {
        "monthly_payment": round(payment, 2),
        "number_of_payments": n,
        "total_paid": round(payment * n, 2),
        "total_interest": round(payment * n - principal, 2),
    }


@mcp.tool
def compound_interest(
    principal: Money,
    annual_rate_percent: RatePct,
    years: Years,
    compounds_per_year: Annotated[
        int, Field(ge=1, le=365, description="Compounding periods per year, e.g. 1, 4, 12 or 365.")
    ] = 12,
) -> dict[str, Any]:
    """Calculate the future value of a lump sum with compound interest.

    Returns the final balance, the interest earned and the effective annual
    rate (APY) in percent.
    """
    r = annual_rate_percent / 100
    final = principal * (1 + r / compounds_per_year) ** (compounds_per_year * years)
    apy = (1 + r / compounds_per_year) ** compounds_per_year - 1
    return {
        "final_balance": round(final, 2),
        "interest_earned": round(final - principal, 2),
        "effective_annual_rate_percent": round(apy * 100, 4),
    }


@mcp.tool
def portfolio_value(
    holdings: Annotated[
        dict[str, float], Field(description="Ticker symbol -> share count, e.g. {'AAPL': 10, 'MSFT': 2.5}.")
    ],
) -> dict[str, Any]:
    """Value a stock portfolio at the snapshot prices.

    Returns each position's price, market value, day change and weight in the
    portfolio, plus the total value and total day change in USD.
    """
    if not holdings:
        raise ValueError("holdings must contain at least one symbol.")
    positions, total, day_change = [], 0.0, 0.0
    for raw, shares in holdings.items():
        sym = _symbol(raw)
        if shares < 0:
            raise ValueError(f"Share count for {sym} must not be negative.")
        _, _, price, prev = QUOTES[sym]
        value = price * shares
        total += value
        day_change += (price - prev) * shares
        positions.append(
            {
                "symbol": sym,
                "shares": shares,
                "price": price,
                "value": round(value, 2),
                "day_change": round((price - prev) * shares, 2) + 0.0,
            }
        )  # + 0.0 avoids -0.0
    for p in positions:
        p["weight_percent"] = round(p["value"] / total * 100, 2) if total else 0.0
    return {
        "positions": positions,
        "total_value": round(total, 2),
        "day_change": round(day_change, 2) + 0.0,
        "currency": "USD",
        "as_of": AS_OF,
    }


@mcp.tool
def estimate_income_tax(
    income: Annotated[float, Field(ge=0, description="Gross annual income in USD.")],
    filing_status: Annotated[FilingStatus, Field(description="US federal filing status.")],
) -> dict[str, Any]:
    """Estimate US federal income tax (2024 brackets, standard deduction only; not tax advice).

    Returns taxable income, total tax, effective and marginal rates, and the
    tax owed in each bracket.
    """
    taxable = max(0.0, income - STANDARD_DEDUCTION[filing_status])
    tax, lower, marginal, breakdown = 0.0, 0.0, BRACKET_RATES[0], []
    for rate, upper in zip(BRACKET_RATES, [*BRACKET_LIMITS[filing_status], float("inf")], strict=True):
        if taxable <= lower:
            break
        portion = min(taxable, upper) - lower
        tax += portion * rate
        marginal = rate
        breakdown.append(
            {
                "rate_percent": round(rate * 100),
                "taxable_amount": round(float(portion), 2),
                "tax": round(portion * rate, 2),
            }
        )
        lower = upper
    return {
        "tax_year": 2024,
        "filing_status": filing_status,
        "income": income,
        "standard_deduction": STANDARD_DEDUCTION[filing_status],
        "taxable_income": round(taxable, 2),
        "tax": round(tax, 2),
        "effective_rate_percent": round(tax / income * 100, 2) if income else 0.0,
        "marginal_rate_percent": round(marginal * 100),
        "brackets": breakdown,
    }


if __name__ == "__main__":
    from call_log import logged  # beside this file, which runs as a script

    logged(mcp).run(show_banner=False, log_level="WARNING")
