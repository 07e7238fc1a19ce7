// Module BlueZ.
