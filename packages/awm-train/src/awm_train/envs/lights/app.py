"""Home lights: one light per room, switched on or off and dimmed.

A deliberately small application (three tools) for learning curves on a CPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel, Field
from sqlalchemy import create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Light(Base):
    __tablename__ = "lights"
    room: Mapped[str] = mapped_column(primary_key=True)
    is_on: Mapped[int]
    brightness: Mapped[int]


@lru_cache(maxsize=1)
def _standalone_engine():
    # Only used when the app is served on its own (uvicorn app:app); the awm
    # runtime overrides get_db with a session bound to the instance's database.
    return create_engine(f"sqlite:///{os.environ.get('LIGHTS_DB', 'lights.db')}")


def get_db() -> Iterator[Session]:
    with Session(_standalone_engine()) as session:
        yield session


app = FastAPI(title="Lights", description="The lights of one home, one per room.")


class LightOut(BaseModel):
    room: str
    is_on: bool
    brightness: int


class LightList(BaseModel):
    items: list[LightOut]


def _out(light: Light) -> LightOut:
    return LightOut(room=light.room, is_on=bool(light.is_on), brightness=light.brightness)


def _light(db: Session, room: str) -> Light:
    light = db.get(Light, room.strip().lower())
    if light is None:
        rooms = ", ".join(db.scalars(select(Light.room).order_by(Light.room)))
        raise HTTPException(404, f"No light in room {room!r}. Rooms: {rooms}.")
    return light


@app.get("/lights", operation_id="list_lights", response_model=LightList)
def list_lights(db: Session = Depends(get_db)) -> LightList:
    """Every room's light: on or off, and its brightness (0-100)."""
    return LightList(items=[_out(x) for x in db.scalars(select(Light).order_by(Light.room))])


class SwitchIn(BaseModel):
    room: str = Field(description="The room, e.g. kitchen.")
    on: bool = Field(description="true to switch the light on, false to switch it off.")


@app.post("/lights/switch", operation_id="switch_light", response_model=LightOut)
def switch_light(body: SwitchIn, db: Session = Depends(get_db)) -> LightOut:
    """Switch the light in a room on or off."""
    light = _light(db, body.room)
    light.is_on = int(body.on)
    db.commit()
    return _out(light)


class BrightnessIn(BaseModel):
    room: str = Field(description="The room, e.g. kitchen.")
    brightness: int = Field(ge=0, le=100, description="From 0 to 100.")


@app.post("/lights/brightness", operation_id="set_brightness", response_model=LightOut)
def set_brightness(body: BrightnessIn, db: Session = Depends(get_db)) -> LightOut:
    """Set the brightness (0-100) of the light in a room; it does not switch the light on."""
    light = _light(db, body.room)
    light.brightness = body.brightness
    db.commit()
    return _out(light)
