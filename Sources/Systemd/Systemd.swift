// Module Systemd.
