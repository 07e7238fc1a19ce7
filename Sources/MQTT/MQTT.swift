// Module MQTT.
