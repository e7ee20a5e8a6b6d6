"""mod_digest storage: rows in and out; decisions are made by the pure stages before or after."""
