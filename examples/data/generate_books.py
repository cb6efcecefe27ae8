#!/usr/bin/env python3
"""Writes books.csv beside this script: 1,200 made-up books for the bookstore example.

Deterministic: a fixed linear congruential generator (not Python's `random`), so the same file
comes out on every Python 3 version. Run: python3 examples/data/generate_books.py

Columns: isbn,title,author,year,price_cents,genre,stock. No field contains a comma or a quote,
so the file is plain comma-separated text.
"""

import os

ROWS = 1200

FIRST = ["Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
         "Kemal", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tariq"]
LAST = ["Abbott", "Bianchi", "Castillo", "Dubois", "Eriksen", "Fischer", "Gallo", "Haddad",
        "Ivanova", "Jensen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor"]
ADJECTIVES = ["Silent", "Crimson", "Hidden", "Last", "Winter", "Golden", "Broken", "Distant",
              "Quiet", "Burning", "Forgotten", "Northern", "Paper", "Glass", "Iron", "Salt"]
NOUNS = ["River", "Garden", "Lighthouse", "Orchard", "Archive", "Harbor", "Mountain", "Library",
         "Clockmaker", "Cartographer", "Island", "Station", "Forest", "Letter", "Bridge", "Comet"]
GENRES = ["fantasy", "mystery", "history", "science", "poetry", "romance", "travel", "biography"]


class Lcg:
    """Numerical Recipes' 32-bit LCG."""

    def __init__(self, seed):
        self.state = seed

    def next(self, bound):
        self.state = (1664525 * self.state + 1013904223) % 2**32
        return (self.state >> 8) % bound


def isbn13(n):
    body = "978" + f"{n:09d}"
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body))
    return body + str((10 - total % 10) % 10)


def main():
    rng = Lcg(20240601)
    # 60 authors, so "books by author" returns a handful of rows.
    authors = [f"{FIRST[i % len(FIRST)]} {LAST[(i * 7) % len(LAST)]}" for i in range(60)]
    lines = ["isbn,title,author,year,price_cents,genre,stock"]
    for i in range(ROWS):
        title = f"The {ADJECTIVES[rng.next(len(ADJECTIVES))]} {NOUNS[rng.next(len(NOUNS))]}"
        if rng.next(3) == 0:
            title += f" Vol {1 + rng.next(4)}"
        author = authors[rng.next(len(authors))]
        year = 1950 + rng.next(75)
        price = 499 + rng.next(4500)
        genre = GENRES[rng.next(len(GENRES))]
        stock = rng.next(25)
        lines.append(f"{isbn13(100000 + i * 37)},{title},{author},{year},{price},{genre},{stock}")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "books.csv")
    with open(path, "w", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
