-- the reviews table is missing a closing parenthesis after its CHECK
CREATE TABLE users (
  user_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE
);
CREATE TABLE books (
  book_id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  author TEXT NOT NULL,
  genre TEXT NOT NULL,
  price REAL NOT NULL CHECK (price > 0),
  stock INTEGER NOT NULL CHECK (stock >= 0)
);
CREATE TABLE orders (
  order_id INTEGER PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users(user_id),
  status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'cancelled')),
  created_at TEXT NOT NULL,
  total REAL NOT NULL
);
CREATE TABLE order_items (
  order_item_id INTEGER PRIMARY KEY,
  order_id INTEGER NOT NULL REFERENCES orders(order_id),
  book_id INTEGER NOT NULL REFERENCES books(book_id),
  quantity INTEGER NOT NULL CHECK (quantity > 0),
  unit_price REAL NOT NULL
);
CREATE TABLE reviews (
  review_id INTEGER PRIMARY KEY,
  book_id INTEGER NOT NULL REFERENCES books(book_id),
  user_id INTEGER NOT NULL REFERENCES users(user_id),
  rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5,
  body TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (book_id, user_id)
);
CREATE INDEX idx_orders_user ON orders(user_id);
