"""Reproductions of the papers' tables and figures: presets + runs + reports beside paper values."""
