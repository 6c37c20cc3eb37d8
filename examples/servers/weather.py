"""Demo MCP server: weather conditions, forecasts, alerts and air quality.

All data comes from a small built-in table, so results are deterministic and
no network access is needed. Run over stdio with:

    python examples/servers/weather.py
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

mcp = FastMCP(
    "weather",
    instructions="Current conditions, forecasts, alerts and air quality for cities worldwide",
)

Units = Literal["metric", "imperial"]

# Base observations per city (metric units).
CITIES: dict[str, dict[str, Any]] = {
    "london": {
        "name": "London",
        "country": "GB",
        "region": "England",
        "temp_c": 14.2,
        "humidity": 78,
        "wind_kph": 19.0,
        "wind_dir": "SW",
        "pressure_hpa": 1012,
        "condition": "Light rain",
        "uv_index": 2,
        "aqi": 38,
        "pm2_5": 9.1,
        "pm10": 16.4,
    },
    "paris": {
        "name": "Paris",
        "country": "FR",
        "region": "Ile-de-France",
        "temp_c": 17.5,
        "humidity": 64,
        "wind_kph": 12.0,
        "wind_dir": "W",
        "pressure_hpa": 1016,
        "condition": "Partly cloudy",
        "uv_index": 4,
        "aqi": 52,
        "pm2_5": 12.8,
        "pm10": 21.0,
    },
    "new york": {
        "name": "New York",
        "country": "US",
        "region": "New York",
        "temp_c": 22.8,
        "humidity": 58,
        "wind_kph": 15.0,
        "wind_dir": "NW",
        "pressure_hpa": 1018,
        "condition": "Sunny",
        "uv_index": 7,
        "aqi": 61,
        "pm2_5": 15.2,
        "pm10": 24.7,
    },
    "tokyo": {
        "name": "Tokyo",
        "country": "JP",
        "region": "Kanto",
        "temp_c": 26.1,
        "humidity": 72,
        "wind_kph": 9.0,
        "wind_dir": "S",
        "pressure_hpa": 1008,
        "condition": "Humid and overcast",
        "uv_index": 6,
        "aqi": 47,
        "pm2_5": 11.3,
        "pm10": 19.8,
    },
    "sydney": {
        "name": "Sydney",
        "country": "AU",
        "region": "New South Wales",
        "temp_c": 16.4,
        "humidity": 55,
        "wind_kph": 22.0,
        "wind_dir": "SE",
        "pressure_hpa": 1021,
        "condition": "Clear",
        "uv_index": 3,
        "aqi": 22,
        "pm2_5": 5.0,
        "pm10": 11.2,
    },
    "mumbai": {
        "name": "Mumbai",
        "country": "IN",
        "region": "Maharashtra",
        "temp_c": 30.3,
        "humidity": 84,
        "wind_kph": 18.0,
        "wind_dir": "WSW",
        "pressure_hpa": 1004,
        "condition": "Heavy rain",
        "uv_index": 5,
        "aqi": 118,
        "pm2_5": 42.6,
        "pm10": 88.1,
    },
    "cairo": {
        "name": "Cairo",
        "country": "EG",
        "region": "Cairo Governorate",
        "temp_c": 35.7,
        "humidity": 21,
        "wind_kph": 14.0,
        "wind_dir": "N",
        "pressure_hpa": 1009,
        "condition": "Sunny",
        "uv_index": 10,
        "aqi": 156,
        "pm2_5": 64.9,
        "pm10": 171.3,
    },
    "sao paulo": {
        "name": "Sao Paulo",
        "country": "BR",
        "region": "Sao Paulo",
        "temp_c": 19.9,
        "humidity": 69,
        "wind_kph": 8.0,
        "wind_dir": "E",
        "pressure_hpa": 1017,
        "condition": "Mist",
        "uv_index": 4,
        "aqi": 73,
        "pm2_5": 22.4,
        "pm10": 35.9,
    },
}

ALERTS: dict[str, list[dict[str, str]]] = {
    "england": [
        {
            "event": "Yellow wind warning",
            "severity": "minor",
            "areas": "South West England",
            "onset": "Tonight 21:00",
            "expires": "Tomorrow 09:00",
            "description": "Gusts of 50-60 mph possible on exposed coasts.",
        }
    ],
    "maharashtra": [
        {
            "event": "Orange rainfall alert",
            "severity": "severe",
            "areas": "Mumbai, Thane, Raigad",
            "onset": "Today 06:00",
            "expires": "Day after tomorrow 06:00",
            "description": "Very heavy rain (115-204 mm/24h); localised flooding likely.",
        }
    ],
    "cairo governorate": [
        {
            "event": "Extreme heat advisory",
            "severity": "moderate",
            "areas": "Greater Cairo",
            "onset": "Today 11:00",
            "expires": "Today 18:00",
            "description": "Temperatures near 40 C; avoid outdoor exertion.",
        }
    ],
}

CONDITION_CYCLE = ["Sunny", "Partly cloudy", "Cloudy", "Light rain", "Showers", "Clear", "Windy"]
TEMP_OFFSETS = [0.0, 1.4, -0.8, -2.1, 0.6, 2.3, 1.1]
DAY_LABELS = ["Today", "Tomorrow"]


def _city(city: str) -> dict[str, Any]:
    key = " ".join(city.strip().lower().split())
    if key not in CITIES:
        known = ", ".join(c["name"] for c in CITIES.values())
        raise ValueError(f"Unknown city {city!r}. Known cities: {known}.")
    return CITIES[key]


def _temp(celsius: float, units: Units) -> float:
    return round(celsius * 9 / 5 + 32, 1) if units == "imperial" else round(celsius, 1)


def _wind(kph: float, units: Units) -> float:
    return round(kph / 1.609344, 1) if units == "imperial" else round(kph, 1)


CityArg = Annotated[str, Field(description="City name, e.g. 'London' or 'New York' (case-insensitive).")]
UnitsArg = Annotated[Units, Field(description="'metric' (C, km/h) or 'imperial' (F, mph).")]


@mcp.tool
def get_current_weather(city: CityArg, units: UnitsArg = "metric") -> dict[str, Any]:
    """Get current weather conditions for a city.

    Returns temperature, feels-like temperature, humidity, wind speed and
    direction, pressure, UV index and a short condition summary.
    """
    c = _city(city)
    feels_c = (
        c["temp_c"] + max(0, c["humidity"] - 40) / 10  # humid heat feels warmer
        if c["temp_c"] >= 24
        else c["temp_c"] - c["wind_kph"] / 10  # wind chill
    )
    return {
        "city": c["name"],
        "country": c["country"],
        "units": units,
        "temperature": _temp(c["temp_c"], units),
        "feels_like": _temp(feels_c, units),
        "humidity_percent": c["humidity"],
        "wind_speed": _wind(c["wind_kph"], units),
        "wind_speed_unit": "mph" if units == "imperial" else "km/h",
        "wind_direction": c["wind_dir"],
        "pressure_hpa": c["pressure_hpa"],
        "uv_index": c["uv_index"],
        "condition": c["condition"],
    }


@mcp.tool
def get_forecast(
    city: CityArg,
    days: Annotated[int, Field(ge=1, le=7, description="Number of days, 1-7 (day 1 is today).")] = 3,
) -> dict[str, Any]:
    """Get a daily weather forecast for a city (metric units).

    Returns one entry per day with high/low temperature in Celsius, condition,
    chance of precipitation in percent and maximum wind speed in km/h.
    """
    c = _city(city)
    seed = sum(ord(ch) for ch in c["name"])
    daily = []
    for i in range(days):
        condition = c["condition"] if i == 0 else CONDITION_CYCLE[(seed + i) % len(CONDITION_CYCLE)]
        high = c["temp_c"] + 2.5 + TEMP_OFFSETS[(seed + i) % len(TEMP_OFFSETS)]
        wet = any(w in condition.lower() for w in ("rain", "shower", "mist"))
        daily.append(
            {
                "day": i + 1,
                "label": DAY_LABELS[i] if i < len(DAY_LABELS) else f"Day {i + 1}",
                "high_c": round(high, 1),
                "low_c": round(high - 6.5 - (seed + i) % 3, 1),
                "condition": condition,
                "precipitation_chance_percent": 60 + 7 * ((seed + i) % 5) if wet else 5 * ((seed + i) % 4),
                "max_wind_kph": round(c["wind_kph"] + 3 * ((seed + 2 * i) % 4), 1),
            }
        )
    return {"city": c["name"], "country": c["country"], "days": daily}


@mcp.tool
def get_alerts(
    region: Annotated[str, Field(description="Region or city, e.g. 'England', 'Maharashtra', 'Mumbai'.")],
) -> dict[str, Any]:
    """Get active severe-weather alerts for a region or city.

    Returns the resolved region and a list of alerts (event, severity, areas,
    onset, expiry, description); the list is empty when nothing is active.
    """
    key = " ".join(region.strip().lower().split())
    if key in CITIES:
        key = CITIES[key]["region"].lower()
    known_regions = {c["region"].lower(): c["region"] for c in CITIES.values()}
    if key not in known_regions:
        names = ", ".join(sorted(known_regions.values()))
        raise ValueError(f"Unknown region {region!r}. Known regions: {names} (or a known city).")
    alerts = ALERTS.get(key, [])
    return {"region": known_regions[key], "alert_count": len(alerts), "alerts": alerts}


def _aqi_category(aqi: int) -> tuple[str, str]:
    bands = [
        (50, "Good", "Air quality is satisfactory."),
        (100, "Moderate", "Unusually sensitive people should limit prolonged outdoor exertion."),
        (
            150,
            "Unhealthy for sensitive groups",
            "Children, older adults and people with lung disease should reduce outdoor exertion.",
        ),
        (200, "Unhealthy", "Everyone should reduce prolonged or heavy outdoor exertion."),
        (300, "Very unhealthy", "Avoid outdoor activity; sensitive groups should stay indoors."),
    ]
    for limit, label, advice in bands:
        if aqi <= limit:
            return label, advice
    return "Hazardous", "Everyone should avoid all outdoor activity."


@mcp.tool
def get_air_quality(city: CityArg) -> dict[str, Any]:
    """Get the current air quality for a city.

    Returns the US EPA air quality index (AQI), its category, health advice,
    the dominant pollutant and PM2.5 / PM10 concentrations in ug/m3.
    """
    c = _city(city)
    category, advice = _aqi_category(c["aqi"])
    return {
        "city": c["name"],
        "aqi": c["aqi"],
        "category": category,
        "health_advice": advice,
        "dominant_pollutant": "pm10" if c["pm10"] > 2.5 * c["pm2_5"] else "pm2_5",
        "pm2_5_ugm3": c["pm2_5"],
        "pm10_ugm3": c["pm10"],
    }


if __name__ == "__main__":
    from call_log import logged  # beside this file, which runs as a script

    logged(mcp).run(show_banner=False, log_level="WARNING")
