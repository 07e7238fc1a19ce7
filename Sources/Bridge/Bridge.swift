// Module Bridge.
