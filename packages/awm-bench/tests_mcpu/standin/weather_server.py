"""A local stand-in for MCP-Universe's ``weather`` server, for offline tests.

MCP-Universe's ``weather`` server (``mcpuniverse.mcp.servers.weather``) asks the US
National Weather Service; this one has the same two tools with the same signatures
(so FastMCP gives them the same input schemas; the descriptions are this file's own)
and answers from fixed data in the same text shape (a few forecast periods with
temperature, wind and forecast). No network.

It runs in mcpuniverse's venv (its ``mcp`` package), started by MCP-Universe's own
``MCPManager`` through the server list in ``AWM_MCPU_SERVERS``.
"""

from __future__ import annotations

import math

from mcp.server.fastmcp import FastMCP

# (latitude, longitude) -> periods: (name, temperature F, wind, forecast)
FORECASTS = {
    (44.4177, -120.9368): [
        ("Today", 64, "8 mph W", "Mostly sunny."),
        ("Tonight", 45, "5 mph W", "Partly cloudy."),
        ("Tomorrow", 58, "12 mph NW", "Showers likely after 11am, then cloudy."),
        ("Tomorrow Night", 41, "9 mph NW", "Chance of showers before midnight."),
        ("Day After", 62, "6 mph W", "Sunny."),
    ],
}
DEFAULT = [
    ("Today", 66, "7 mph W", "Sunny."),
    ("Tonight", 44, "4 mph W", "Clear."),
    ("Tomorrow", 67, "6 mph W", "Sunny."),
    ("Tomorrow Night", 45, "5 mph W", "Mostly clear."),
    ("Day After", 68, "5 mph W", "Sunny."),
]
ALERTS = {"OR": "Event: Wind Advisory\nArea: Stand-in County\nSeverity: Minor"}


def build() -> FastMCP:
    mcp = FastMCP("weather")

    @mcp.tool()
    async def get_alerts(state: str) -> str:
        """Stand-in: active weather alerts for a two-letter US state code."""
        return ALERTS.get(state.upper(), "No active alerts for this state.")

    @mcp.tool()
    async def get_forecast(latitude: float, longitude: float) -> str:
        """Stand-in: the next forecast periods at a point."""
        near = [
            p
            for (lat, lng), p in FORECASTS.items()
            if math.isclose(lat, latitude, abs_tol=0.01)
            and math.isclose(lng, longitude, abs_tol=0.01)
        ]
        periods = near[0] if near else DEFAULT
        return "\n---\n".join(
            f"{name}:\nTemperature: {temp}°F\nWind: {wind}\nForecast: {text}"
            for name, temp, wind, text in periods
        )

    return mcp


if __name__ == "__main__":
    build().run(transport="stdio")
