INSERT INTO lights (room, is_on, brightness) VALUES ('kitchen', 0, 80);
INSERT INTO lights (room, is_on, brightness) VALUES ('bedroom', 1, 40);
INSERT INTO lights (room, is_on, brightness) VALUES ('bathroom', 0, 100);
INSERT INTO lights (room, is_on, brightness) VALUES ('living room', 1, 60);
INSERT INTO lights (room, is_on, brightness) VALUES ('hall', 1, 30);
INSERT INTO lights (room, is_on, brightness) VALUES ('office', 0, 90);
INSERT INTO lights (room, is_on, brightness) VALUES ('garage', 0, 100);
INSERT INTO lights (room, is_on, brightness) VALUES ('porch', 1, 50);
