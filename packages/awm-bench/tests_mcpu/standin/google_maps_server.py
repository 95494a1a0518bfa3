"""A local stand-in for MCP-Universe's ``google-maps`` server, for offline tests.

MCP-Universe starts ``npx -y @modelcontextprotocol/server-google-maps`` with
``GOOGLE_MAPS_API_KEY``; this server speaks its protocol instead: the same seven tool
names with the same input schemas (types, required fields, enums; the descriptions
are this file's own), answering from a small made-up gazetteer with deterministic
data in the shapes that server returns (``places`` with ``place_id`` / ``location`` /
``rating`` / ``types``, ``results`` of elevations, distance-matrix ``elements``...).
A request it cannot answer is an error result, as the real server's
``Place search failed: ZERO_RESULTS``. No network, no key.

It runs in mcpuniverse's venv (its ``mcp`` package), started by MCP-Universe's own
``MCPManager`` through the server list in ``AWM_MCPU_SERVERS``.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import TextContent, Tool

MODES = ["driving", "walking", "bicycling", "transit"]
LOCATION = {
    "type": "object",
    "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
}

TOOLS = [
    Tool(
        name="maps_geocode",
        description="Stand-in: the coordinates of an address.",
        inputSchema={
            "type": "object",
            "properties": {"address": {"type": "string", "description": "An address"}},
            "required": ["address"],
        },
    ),
    Tool(
        name="maps_reverse_geocode",
        description="Stand-in: the address at some coordinates.",
        inputSchema={
            "type": "object",
            "properties": {
                "latitude": {"type": "number", "description": "Latitude"},
                "longitude": {"type": "number", "description": "Longitude"},
            },
            "required": ["latitude", "longitude"],
        },
    ),
    Tool(
        name="maps_search_places",
        description="Stand-in: places matching a text query.",
        inputSchema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "location": {**LOCATION, "description": "Where to centre the search (optional)"},
                "radius": {"type": "number", "description": "Search radius in meters"},
            },
            "required": ["query"],
        },
    ),
    Tool(
        name="maps_place_details",
        description="Stand-in: everything known about one place.",
        inputSchema={
            "type": "object",
            "properties": {"place_id": {"type": "string", "description": "A place ID"}},
            "required": ["place_id"],
        },
    ),
    Tool(
        name="maps_distance_matrix",
        description="Stand-in: distances and travel times between origins and destinations.",
        inputSchema={
            "type": "object",
            "properties": {
                "origins": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Origin addresses or coordinates",
                },
                "destinations": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Destination addresses or coordinates",
                },
                "mode": {"type": "string", "description": "How to travel", "enum": MODES},
            },
            "required": ["origins", "destinations"],
        },
    ),
    Tool(
        name="maps_elevation",
        description="Stand-in: the elevation of points.",
        inputSchema={
            "type": "object",
            "properties": {
                "locations": {
                    "type": "array",
                    "items": {**LOCATION, "required": ["latitude", "longitude"]},
                    "description": "The points",
                }
            },
            "required": ["locations"],
        },
    ),
    Tool(
        name="maps_directions",
        description="Stand-in: a route between two points.",
        inputSchema={
            "type": "object",
            "properties": {
                "origin": {"type": "string", "description": "Where to start"},
                "destination": {"type": "string", "description": "Where to end"},
                "mode": {"type": "string", "description": "How to travel", "enum": MODES},
            },
            "required": ["origin", "destination"],
        },
    ),
]

# A made-up region: four towns on one highway, and places in them.
TOWNS = {
    "Alder Bay": (44.1012, -121.3021, 118.0),
    "Birchwood": (44.2498, -121.1003, 402.0),
    "Cinder Flats": (44.4011, -120.9507, 366.0),
    "Dunmore Heights": (44.5503, -120.8002, 511.0),
}
ROUTE = ["Alder Bay", "Birchwood", "Cinder Flats", "Dunmore Heights"]
HIGHWAY = "Stand-in Route 9"

PLACES: list[dict[str, Any]] = [
    {
        "place_id": "standin-birchwood-travel-plaza",
        "name": "Birchwood Travel Plaza",
        "city": "Birchwood",
        "formatted_address": "210 Plaza Way, Birchwood",
        "location": {"lat": 44.2521, "lng": -121.1042},
        "rating": 4.2,
        "types": ["gas_station", "convenience_store", "point_of_interest", "establishment"],
        "kinds": ["rest stop", "rest area", "travel plaza", "gas station"],
        "elevation": 398.4,
    },
    {
        "place_id": "standin-cinder-flats-service-area",
        "name": "Cinder Flats Service Area",
        "city": "Cinder Flats",
        "formatted_address": "4 Service Road, Cinder Flats",
        "location": {"lat": 44.3987, "lng": -120.9551},
        "rating": 3.9,
        "types": ["rest_stop", "point_of_interest", "establishment"],
        "kinds": ["rest stop", "rest area", "service area"],
        "elevation": 361.2,
    },
    {
        "place_id": "standin-birchwood-ridge-lookout",
        "name": "Birchwood Ridge Lookout",
        "city": "Birchwood",
        "formatted_address": "Ridge Trail, Birchwood",
        "location": {"lat": 44.2602, "lng": -121.0911},
        "rating": 4.4,
        "types": ["tourist_attraction", "point_of_interest", "establishment"],
        "kinds": ["scenic viewpoint", "viewpoint", "lookout", "overlook"],
        "elevation": 688.2,
    },
    {
        "place_id": "standin-cinder-flats-overlook",
        "name": "Cinder Flats Overlook",
        "city": "Cinder Flats",
        "formatted_address": "1 Overlook Drive, Cinder Flats",
        "location": {"lat": 44.4102, "lng": -120.9433},
        "rating": 4.3,
        "types": ["tourist_attraction", "point_of_interest", "establishment"],
        "kinds": ["scenic viewpoint", "viewpoint", "lookout", "overlook"],
        "elevation": 412.5,
    },
    {
        "place_id": "standin-quarry-rim-viewpoint",
        "name": "Quarry Rim Viewpoint",
        "city": "Cinder Flats",
        "formatted_address": "12 Rim Road, Cinder Flats",
        "location": {"lat": 44.4177, "lng": -120.9368},
        "rating": 4.7,
        "types": ["tourist_attraction", "point_of_interest", "establishment"],
        "kinds": ["scenic viewpoint", "viewpoint", "lookout"],
        "elevation": 523.4,
    },
    {
        "place_id": "standin-old-mill-bluff",
        "name": "Old Mill Bluff",
        "city": "Cinder Flats",
        "formatted_address": "Mill Lane, Cinder Flats",
        "location": {"lat": 44.3925, "lng": -120.9612},
        "rating": 3.8,
        "types": ["tourist_attraction", "point_of_interest", "establishment"],
        "kinds": ["scenic viewpoint", "viewpoint", "bluff"],
        "elevation": 455.0,
    },
]
PUBLIC = ("name", "formatted_address", "location", "place_id", "rating", "types")


class Failed(Exception):
    """An answer the real server gives as an error result."""


def _point(text: str) -> tuple[float, float] | None:
    """A town, a place (by name, address or ``place_id:ID``) or ``lat,lng``."""
    text = text.strip()
    if text.startswith("place_id:"):
        for place in PLACES:
            if place["place_id"] == text.removeprefix("place_id:"):
                return place["location"]["lat"], place["location"]["lng"]
        return None
    for place in PLACES:
        if text.lower() in (place["name"].lower(), place["formatted_address"].lower()):
            return place["location"]["lat"], place["location"]["lng"]
    for town, (lat, lng, _) in TOWNS.items():
        if text.lower() == town.lower():
            return lat, lng
    try:
        lat_text, lng_text = text.split(",")
        return float(lat_text), float(lng_text)
    except ValueError:
        return None


def _km(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lng1, lat2, lng2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    )
    return 2 * 6371.0 * math.asin(math.sqrt(h))


def _leg(a: tuple[float, float], b: tuple[float, float], mode: str) -> dict[str, Any]:
    meters = round(_km(a, b) * 1000 * 1.2)  # roads are not straight
    speed = {"driving": 80.0, "transit": 50.0, "bicycling": 18.0, "walking": 5.0}[mode]
    seconds = round(meters / 1000 / speed * 3600)
    return {
        "distance": {"text": f"{meters / 1000:.1f} km", "value": meters},
        "duration": {"text": f"{round(seconds / 60)} mins", "value": seconds},
    }


def search(query: str) -> dict[str, Any]:
    q = query.lower()
    named = [p for p in PLACES if p["name"].lower() in q or p["formatted_address"].lower() in q]
    found = named or [
        p for p in PLACES if p["city"].lower() in q and any(k in q for k in p["kinds"])
    ]
    if not found:
        raise Failed("Place search failed: ZERO_RESULTS")
    return {"places": [{k: p[k] for k in PUBLIC} for p in found]}


def details(place_id: str) -> dict[str, Any]:
    for p in PLACES:
        if p["place_id"] == place_id:
            return {
                "name": p["name"],
                "formatted_address": p["formatted_address"],
                "location": p["location"],
                "formatted_phone_number": "(555) 010-0000",
                "website": f"https://example.invalid/{p['place_id']}",
                "rating": p["rating"],
                "reviews": [],
                "opening_hours": {"weekday_text": ["Open 24 hours"], "open_now": True},
            }
    raise Failed("Place details request failed: INVALID_REQUEST")


def elevation(locations: list[dict[str, float]]) -> dict[str, Any]:
    known = [((p["location"]["lat"], p["location"]["lng"]), p["elevation"]) for p in PLACES]
    known += [((lat, lng), elev) for lat, lng, elev in TOWNS.values()]
    results = []
    for loc in locations:
        point = (loc["latitude"], loc["longitude"])
        near = [
            e for (k, e) in known if abs(k[0] - point[0]) < 1e-4 and abs(k[1] - point[1]) < 1e-4
        ]
        value = (
            near[0]
            if near
            else round(300 + 200 * math.sin(point[0] * 7) * math.cos(point[1] * 5), 3)
        )
        results.append(
            {"elevation": value, "location": {"lat": point[0], "lng": point[1]}, "resolution": 9.5}
        )
    return {"results": results}


def geocode(address: str) -> dict[str, Any]:
    wanted = address.strip().lower()
    for p in PLACES:
        if wanted in (p["name"].lower(), p["formatted_address"].lower()):
            return {k: p[k] for k in ("location", "formatted_address", "place_id")}
    for town, (lat, lng, _) in TOWNS.items():
        if wanted == town.lower():
            place_id = f"standin-town-{town.lower().replace(' ', '-')}"
            return {
                "location": {"lat": lat, "lng": lng},
                "formatted_address": town,
                "place_id": place_id,
            }
    raise Failed("Geocoding failed: ZERO_RESULTS")


def reverse_geocode(latitude: float, longitude: float) -> dict[str, Any]:
    candidates = [
        (p["formatted_address"], p["place_id"], (p["location"]["lat"], p["location"]["lng"]))
        for p in PLACES
    ]
    candidates += [
        (t, f"standin-town-{t.lower().replace(' ', '-')}", (v[0], v[1])) for t, v in TOWNS.items()
    ]
    address, place_id, point = min(candidates, key=lambda c: _km(c[2], (latitude, longitude)))
    if _km(point, (latitude, longitude)) > 10:
        raise Failed("Reverse geocoding failed: ZERO_RESULTS")
    city = address.split(", ")[-1]
    return {
        "formatted_address": address,
        "place_id": place_id,
        "address_components": [
            {"long_name": city, "short_name": city, "types": ["locality", "political"]}
        ],
    }


def distance_matrix(origins: list[str], destinations: list[str], mode: str) -> dict[str, Any]:
    rows = []
    for origin in origins:
        elements = []
        for destination in destinations:
            a, b = _point(origin), _point(destination)
            if a is None or b is None:
                elements.append({"status": "NOT_FOUND"})
            else:
                elements.append({"status": "OK", **_leg(a, b, mode)})
        rows.append({"elements": elements})
    return {"origin_addresses": origins, "destination_addresses": destinations, "results": rows}


def directions(origin: str, destination: str, mode: str) -> dict[str, Any]:
    names = [t.lower() for t in ROUTE]
    if origin.lower() not in names or destination.lower() not in names:
        raise Failed("Directions request failed: NOT_FOUND")
    i, j = names.index(origin.lower()), names.index(destination.lower())
    towns = ROUTE[i : j + 1] if i <= j else ROUTE[j : i + 1][::-1]
    steps = []
    for a, b in zip(towns, towns[1:], strict=False):
        leg = _leg(TOWNS[a][:2], TOWNS[b][:2], mode)
        steps.append(
            {
                "instructions": f"Continue on {HIGHWAY} from <b>{a}</b> to <b>{b}</b>",
                **leg,
                "travel_mode": mode.upper(),
            }
        )
    total = _leg(TOWNS[towns[0]][:2], TOWNS[towns[-1]][:2], mode)
    total["distance"]["value"] = sum(s["distance"]["value"] for s in steps)
    total["distance"]["text"] = f"{total['distance']['value'] / 1000:.1f} km"
    total["duration"]["value"] = sum(s["duration"]["value"] for s in steps)
    total["duration"]["text"] = f"{round(total['duration']['value'] / 60)} mins"
    via = " and ".join(towns[1:-1]) or "the direct road"
    return {"routes": [{"summary": f"{HIGHWAY} via {via}", **total, "steps": steps}]}


def answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    mode = arguments.get("mode", "driving")
    if name == "maps_geocode":
        return geocode(arguments["address"])
    if name == "maps_reverse_geocode":
        return reverse_geocode(arguments["latitude"], arguments["longitude"])
    if name == "maps_search_places":
        return search(arguments["query"])
    if name == "maps_place_details":
        return details(arguments["place_id"])
    if name == "maps_distance_matrix":
        return distance_matrix(arguments["origins"], arguments["destinations"], mode)
    if name == "maps_elevation":
        return elevation(arguments["locations"])
    if name == "maps_directions":
        return directions(arguments["origin"], arguments["destination"], mode)
    raise Failed(f"Unknown tool: {name}")


def build() -> Server:
    server: Server = Server("standin/google-maps")

    @server.list_tools()
    async def list_tools() -> list[Tool]:
        return TOOLS

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[TextContent]:
        return [TextContent(type="text", text=json.dumps(answer(name, arguments), indent=2))]

    return server


async def main() -> None:
    server = build()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
