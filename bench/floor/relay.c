/* The floor relay: the least a BLE → MQTT bridge can do per notification on this machine, for `make bench` to
 * measure gattbridge against. One characteristic, one topic, one thread, one poll loop; nothing else (no config,
 * no reconnection, no Home Assistant, no logging on the hot path).
 *
 *     floor-relay CHARACTERISTIC HOST PORT TOPIC [QOS]
 *
 * CHARACTERISTIC is a BlueZ object path (/org/bluez/hci0/dev_…/serviceXXXX/charYYYY) or ADDRESS/UUID, looked up in
 * GetManagedObjects on the bus in DBUS_SYSTEM_BUS_ADDRESS; the device must already be connected. Like gattbridge,
 * it tries the fd path first (AcquireNotify, one SOCK_SEQPACKET packet per notification; BlueZ announces no support
 * for it, so trying is the only test) and falls back to StartNotify and one match rule for PropertiesChanged on that
 * path. Each value goes
 * out as one PUBLISH at QOS (default 1; `make bench`'s decoded-value rounds compare at 0 and 1), lower-case hex (gattbridge's `hex` codec: same payload, same size), MQTT 5, clean
 * session, TCP_NODELAY and 100 in flight (gattbridge's settings), through unthreaded libmosquitto
 * (mosquitto_loop_read/write/misc from this loop). D-Bus is driven through its watch functions, so a readable bus
 * costs one read, not libdbus's own extra poll. Prints {"event":"ready",…} once subscribed; exits on SIGTERM/SIGINT
 * (BlueZ ends the notify session when the relay leaves the bus) or when anything fails.
 */
#include <dbus/dbus.h>
#include <mosquitto.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CHAR_IFACE "org.bluez.GattCharacteristic1"

static struct mosquitto *mosq;
static const char *topic;
static int qos = 1;
static char char_path[512];
static DBusWatch *watches[8];
static int nwatches, mqtt_ready;
static volatile sig_atomic_t stop;

static void die(const char *what, const char *why) {
    fprintf(stderr, "floor-relay: %s: %s\n", what, why);
    exit(1);
}

static void publish(const unsigned char *value, int n) {
    static const char digits[] = "0123456789abcdef";
    char hex[1024];
    if (n > (int)sizeof hex / 2) n = sizeof hex / 2;
    for (int i = 0; i < n; i++) {
        hex[2 * i] = digits[value[i] >> 4];
        hex[2 * i + 1] = digits[value[i] & 15];
    }
    int rc = mosquitto_publish(mosq, NULL, topic, 2 * n, hex, qos, false);
    if (rc != MOSQ_ERR_SUCCESS) die("publish", mosquitto_strerror(rc));
}

/* PropertiesChanged(s interface, a{sv} changed, as invalidated) on the characteristic: publish a changed Value. */
static DBusHandlerResult on_message(DBusConnection *bus, DBusMessage *m, void *data) {
    (void)bus, (void)data;
    DBusMessageIter it, dict, entry, variant, bytes;
    const char *path = dbus_message_get_path(m), *key;
    if (!dbus_message_is_signal(m, DBUS_INTERFACE_PROPERTIES, "PropertiesChanged") || !path || strcmp(path, char_path)
        || !dbus_message_iter_init(m, &it) || !dbus_message_iter_next(&it)
        || dbus_message_iter_get_arg_type(&it) != DBUS_TYPE_ARRAY)
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
    for (dbus_message_iter_recurse(&it, &dict); dbus_message_iter_get_arg_type(&dict) == DBUS_TYPE_DICT_ENTRY;
         dbus_message_iter_next(&dict)) {
        dbus_message_iter_recurse(&dict, &entry);
        dbus_message_iter_get_basic(&entry, &key);
        dbus_message_iter_next(&entry);
        dbus_message_iter_recurse(&entry, &variant);
        if (strcmp(key, "Value") || dbus_message_iter_get_arg_type(&variant) != DBUS_TYPE_ARRAY
            || dbus_message_iter_get_element_type(&variant) != DBUS_TYPE_BYTE) continue;
        const unsigned char *value;
        int n;
        dbus_message_iter_recurse(&variant, &bytes);
        dbus_message_iter_get_fixed_array(&bytes, &value, &n);
        publish(value, n);
    }
    return DBUS_HANDLER_RESULT_HANDLED;
}

/* A blocking method call (set-up only); exits when it fails, unless `may_fail`: then NULL. */
static DBusMessage *call(DBusConnection *bus, DBusMessage *m, int may_fail) {
    DBusError err;
    dbus_error_init(&err);
    DBusMessage *reply = dbus_connection_send_with_reply_and_block(bus, m, 10000, &err);
    if (!reply && !may_fail) die(dbus_message_get_member(m), err.message);
    dbus_message_unref(m);
    dbus_error_free(&err);
    return reply;
}

/* Finds the characteristic in GetManagedObjects (a{oa{sa{sv}}}) and keeps its path in char_path. */
static void find_characteristic(DBusConnection *bus, const char *want) {
    char segment[32] = "", uuid[64] = "";
    if (want[0] != '/') {   /* ADDRESS/UUID → "/dev_AA_BB_CC_DD_EE_FF/" and the UUID */
        if (strlen(want) < 19 || want[17] != '/') die(want, "expected an object path or ADDRESS/UUID");
        snprintf(segment, sizeof segment, "/dev_%.17s/", want);
        for (char *c = segment; *c; c++) if (*c == ':') *c = '_';
        snprintf(uuid, sizeof uuid, "%s", want + 18);
    }
    DBusMessageIter it, objects, object, ifaces, iface, props, prop, variant;
    DBusMessage *reply = call(bus, dbus_message_new_method_call("org.bluez", "/",
                              "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"), 0);
    dbus_message_iter_init(reply, &it);
    for (dbus_message_iter_recurse(&it, &objects); dbus_message_iter_get_arg_type(&objects) == DBUS_TYPE_DICT_ENTRY;
         dbus_message_iter_next(&objects)) {
        const char *path, *name, *key, *value = "";
        dbus_message_iter_recurse(&objects, &object);
        dbus_message_iter_get_basic(&object, &path);
        dbus_message_iter_next(&object);
        for (dbus_message_iter_recurse(&object, &ifaces); dbus_message_iter_get_arg_type(&ifaces) == DBUS_TYPE_DICT_ENTRY;
             dbus_message_iter_next(&ifaces)) {
            dbus_message_iter_recurse(&ifaces, &iface);
            dbus_message_iter_get_basic(&iface, &name);
            if (strcmp(name, CHAR_IFACE)) continue;
            dbus_message_iter_next(&iface);
            for (dbus_message_iter_recurse(&iface, &props); dbus_message_iter_get_arg_type(&props) == DBUS_TYPE_DICT_ENTRY;
                 dbus_message_iter_next(&props)) {
                dbus_message_iter_recurse(&props, &prop);
                dbus_message_iter_get_basic(&prop, &key);
                dbus_message_iter_next(&prop);
                dbus_message_iter_recurse(&prop, &variant);
                if (!strcmp(key, "UUID") && dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_STRING)
                    dbus_message_iter_get_basic(&variant, &value);
            }
            if (want[0] == '/' ? !strcmp(path, want) : strstr(path, segment) && !strcasecmp(value, uuid))
                snprintf(char_path, sizeof char_path, "%s", path);
        }
    }
    dbus_message_unref(reply);
    if (!char_path[0]) die(want, "no such characteristic (is the device connected?)");
}

static dbus_bool_t add_watch(DBusWatch *w, void *data) {
    (void)data;
    if (nwatches == (int)(sizeof watches / sizeof *watches)) return FALSE;
    watches[nwatches++] = w;
    return TRUE;
}

static void remove_watch(DBusWatch *w, void *data) {
    (void)data;
    for (int i = 0; i < nwatches; i++)
        if (watches[i] == w) watches[i] = watches[--nwatches];
}

static void on_connect(struct mosquitto *m, void *data, int rc) {
    (void)m, (void)data;
    if (rc) die("MQTT CONNACK", mosquitto_connack_string(rc));
    mqtt_ready = 1;
}

static void on_signal(int sig) { (void)sig, stop = 1; }

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) die("usage", "floor-relay CHARACTERISTIC(path or ADDRESS/UUID) HOST PORT TOPIC [QOS]");
    topic = argv[4];
    if (argc == 6) qos = atoi(argv[5]);
    struct sigaction sa = {.sa_handler = on_signal};   /* no SA_RESTART: poll returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);   /* a broker gone away shows as a failed write, not a killed relay */

    mosquitto_lib_init();
    if (!(mosq = mosquitto_new(NULL, true, NULL))) die("mosquitto_new", "out of memory");
    mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_int_option(mosq, MOSQ_OPT_SEND_MAXIMUM, 100);
    mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_callback_set(mosq, on_connect);
    int rc = mosquitto_connect(mosq, argv[2], atoi(argv[3]), 60);
    while (rc == MOSQ_ERR_SUCCESS && !mqtt_ready) rc = mosquitto_loop(mosq, 1000, 1);
    if (rc != MOSQ_ERR_SUCCESS) die("MQTT connect", mosquitto_strerror(rc));

    DBusError err;
    dbus_error_init(&err);
    DBusConnection *bus = dbus_bus_get(DBUS_BUS_SYSTEM, &err);
    if (!bus) die("system bus", err.message);
    find_characteristic(bus, argv[1]);
    int notify_fd = -1;
    DBusMessage *m = dbus_message_new_method_call("org.bluez", char_path, CHAR_IFACE, "AcquireNotify"), *reply;
    DBusMessageIter it, options;
    dbus_uint16_t mtu;
    dbus_message_iter_init_append(m, &it);
    dbus_message_iter_open_container(&it, DBUS_TYPE_ARRAY, "{sv}", &options);
    dbus_message_iter_close_container(&it, &options);
    if ((reply = call(bus, m, 1))) {
        if (!dbus_message_get_args(reply, &err, DBUS_TYPE_UNIX_FD, &notify_fd, DBUS_TYPE_UINT16, &mtu,
                                   DBUS_TYPE_INVALID)) die("AcquireNotify reply", err.message);
        dbus_message_unref(reply);
    } else {
        char rule[700];
        snprintf(rule, sizeof rule, "type='signal',sender='org.bluez',interface='" DBUS_INTERFACE_PROPERTIES
                 "',member='PropertiesChanged',path='%s',arg0='" CHAR_IFACE "'", char_path);
        dbus_bus_add_match(bus, rule, &err);
        if (dbus_error_is_set(&err)) die("AddMatch", err.message);
        dbus_connection_add_filter(bus, on_message, NULL, NULL);
        dbus_message_unref(call(bus, dbus_message_new_method_call("org.bluez", char_path, CHAR_IFACE, "StartNotify"), 0));
    }
    dbus_connection_set_watch_functions(bus, add_watch, remove_watch, NULL, NULL, NULL);
    printf("{\"event\":\"ready\",\"path\":\"%s\",\"characteristic\":\"%s\"}\n", notify_fd >= 0 ? "fd" : "signal", char_path);
    fflush(stdout);

    struct pollfd fds[2 + sizeof watches / sizeof *watches];
    DBusWatch *polled[sizeof watches / sizeof *watches];
    unsigned char packet[517];
    while (!stop) {
        while (dbus_connection_dispatch(bus) == DBUS_DISPATCH_DATA_REMAINS) {}
        int n = 0;
        fds[n++] = (struct pollfd){.fd = notify_fd, .events = POLLIN};   /* ignored when -1 (signal path) */
        fds[n++] = (struct pollfd){.fd = mosquitto_socket(mosq), .events = POLLIN | (mosquitto_want_write(mosq) ? POLLOUT : 0)};
        int nw = 0;
        for (int i = 0; i < nwatches; i++) {
            unsigned flags = dbus_watch_get_flags(watches[i]);
            if (!dbus_watch_get_enabled(watches[i])) continue;
            polled[nw++] = watches[i];
            fds[n++] = (struct pollfd){.fd = dbus_watch_get_unix_fd(watches[i]),
                .events = (flags & DBUS_WATCH_READABLE ? POLLIN : 0) | (flags & DBUS_WATCH_WRITABLE ? POLLOUT : 0)};
        }
        if (poll(fds, n, 1000) < 0) {
            if (errno == EINTR) continue;
            die("poll", strerror(errno));
        }
        if (fds[0].revents) {   /* one notification per packet; a hang-up means BlueZ ended the session */
            ssize_t got = read(notify_fd, packet, sizeof packet);
            if (got <= 0) die("notify socket", got ? strerror(errno) : "closed by BlueZ");
            publish(packet, (int)got);
        }
        if (fds[1].revents & (POLLIN | POLLERR | POLLHUP) && (rc = mosquitto_loop_read(mosq, 1)))
            die("MQTT read", mosquitto_strerror(rc));
        if (mosquitto_want_write(mosq) && (rc = mosquitto_loop_write(mosq, 1)))
            die("MQTT write", mosquitto_strerror(rc));
        if ((rc = mosquitto_loop_misc(mosq))) die("MQTT keepalive", mosquitto_strerror(rc));
        for (int i = 0; i < nw; i++) {
            short r = fds[2 + i].revents;
            if (!r) continue;
            dbus_watch_handle(polled[i], (r & POLLIN ? DBUS_WATCH_READABLE : 0) | (r & POLLOUT ? DBUS_WATCH_WRITABLE : 0)
                              | (r & POLLERR ? DBUS_WATCH_ERROR : 0) | (r & POLLHUP ? DBUS_WATCH_HANGUP : 0));
            break;   /* handling may add or remove watches: poll again with the fresh set */
        }
    }
    mosquitto_disconnect(mosq);
    mosquitto_destroy(mosq);
    mosquitto_lib_cleanup();
    return 0;
}
