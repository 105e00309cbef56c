"""A toy plugin of collabecon: an algorithm, a seller and a reproduction in entry points."""
