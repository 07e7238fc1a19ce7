"""The hardware-free BLE test bench (see README.md)."""
