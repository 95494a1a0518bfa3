"""Our own list of 100 seed domains the scenario stage expands from (self-instruct)."""

from __future__ import annotations

SEED_DOMAINS: tuple[str, ...] = (
    "online bookstore", "public library", "medical clinic", "dental practice", "veterinary clinic",
    "pharmacy", "hospital ward", "fitness studio", "yoga school", "sports league",
    "restaurant reservations", "food delivery", "grocery store", "coffee shop loyalty", "catering",
    "hotel booking", "vacation rentals", "airline", "train tickets", "car rental",
    "ride sharing", "bike sharing", "parking garage", "toll road accounts", "moving company",
    "e-commerce marketplace", "fashion retail", "electronics store", "furniture store", "pet supplies",
    "auction house", "second-hand marketplace", "subscription boxes", "gift registry", "florist",
    "bank accounts", "credit union", "personal budgeting", "invoicing", "payroll",
    "expense reports", "insurance claims", "tax preparation", "crowdfunding", "stock brokerage",
    "project tracker", "bug tracker", "customer support desk", "CRM", "recruiting pipeline",
    "employee onboarding", "time tracking", "shift scheduling", "meeting rooms", "office supplies",
    "university courses", "school gradebook", "online courses", "tutoring marketplace", "exam scheduling",
    "student housing", "research lab inventory", "conference organising", "event ticketing", "concert venue",
    "museum membership", "theatre box office", "cinema", "music lessons", "photo studio",
    "recipe manager", "meal planning", "home maintenance", "property management", "real estate listings",
    "homeowners association", "coworking space", "storage units", "laundry service", "cleaning service",
    "plumbing dispatch", "IT asset management", "software licences", "domain registrar", "web hosting",
    "warehouse inventory", "shipping and parcels", "fleet maintenance", "manufacturing orders", "farm management",
    "animal shelter", "volunteer coordination", "nonprofit donations", "city permits", "public transit passes",
    "court case filing", "legal practice", "wedding planning", "travel agency", "board game cafe",
)

assert len(SEED_DOMAINS) == 100, len(SEED_DOMAINS)


def seeds_for_round(round_number: int, per_round: int = 8) -> list[str]:
    """A deterministic, rotating sample of seeds, so successive rounds explore different domains."""
    start = ((round_number - 1) * per_round) % len(SEED_DOMAINS)
    return [SEED_DOMAINS[(start + i) % len(SEED_DOMAINS)] for i in range(per_round)]
