// Module Bluetooth.
