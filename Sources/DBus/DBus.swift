// Module DBus.
