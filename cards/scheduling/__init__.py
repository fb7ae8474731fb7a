"""Pure scheduling code: no Django import, no clock, no global state."""
