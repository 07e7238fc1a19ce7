// Module Codecs.
