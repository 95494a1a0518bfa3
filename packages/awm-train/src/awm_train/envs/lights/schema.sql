-- Home lights: one row per room. A deliberately small environment for learning
-- curves on a CPU (the cpu-learn recipe): three tools, tasks of one or two calls.

CREATE TABLE lights (
    room        TEXT PRIMARY KEY,
    is_on       INTEGER NOT NULL CHECK (is_on IN (0, 1)),
    brightness  INTEGER NOT NULL CHECK (brightness BETWEEN 0 AND 100)
);
