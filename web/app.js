// gattbridge's web page (docs/web.md). Plain JavaScript, no framework, no build step.
// Every text from the server reaches the DOM as a text node or an attribute value, never as markup: device names,
// advertised names and log text come from anyone in radio range.
'use strict';

(function () {
  var S = {
    csrf: null, password: false, state: null, stateAt: 0, log: [], es: null, started: false,
    scan: null, scanning: false, scanError: null, add: null, results: {}, view: null
  };
  var LOG_KEEP = 500;
  var main = document.getElementById('main');

  // --- DOM helpers -------------------------------------------------------------------------------------------
  // h('tag', {attr: value, text: '…', on: {click: fn}}, child…): children are nodes or strings (text nodes).
  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === 'text') el.textContent = String(v);
        else if (k === 'on') Object.keys(v).forEach(function (e) { el.addEventListener(e, v[e]); });
        else if (k === 'checked' || k === 'disabled' || k === 'value') el[k] = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  // add(el, child…): appends nodes, strings (as text nodes) and arrays of them; skips null, undefined and false.
  function add(el) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) c.forEach(function (x) { add(el, x); });
      else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    }
  }
  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }
  function show(el, on) { el.hidden = !on; }

  // --- formatting --------------------------------------------------------------------------------------------
  function ago(s) {
    if (s === null || s === undefined) return '–';
    s = Math.max(0, Math.round(s));
    if (s < 60) return s + ' s ago';
    if (s < 3600) return Math.floor(s / 60) + ' min ago';
    if (s < 86400) return Math.floor(s / 3600) + ' h ago';
    return Math.floor(s / 86400) + ' d ago';
  }
  function duration(s) {
    s = Math.max(0, Math.floor(s || 0));
    var d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + ' d ' + hh + ' h ' + m + ' min';
    if (hh) return hh + ' h ' + m + ' min';
    if (m) return m + ' min ' + (s % 60) + ' s';
    return s + ' s';
  }
  function clock(t) {
    var d = new Date(t);
    function p(n) { return (n < 10 ? '0' : '') + n; }
    return p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }
  function scalar(v) {
    if (v === null || v === undefined) return '–';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }
  // Seconds since, as the server said it `age_s` ago when the state arrived.
  function since(age) { return age === null || age === undefined ? null : age + (Date.now() - S.stateAt) / 1000; }

  // --- Bluetooth names (docs/configuration.md's codecs; the SIG's assigned numbers) ---------------------------
  var BASE = '-0000-1000-8000-00805f9b34fb';
  function short(uuid) {
    uuid = String(uuid || '').toLowerCase();
    if (uuid.length === 36 && uuid.slice(0, 4) === '0000' && uuid.slice(8) === BASE) return uuid.slice(4, 8);
    return uuid;
  }
  var SERVICES = {
    '1800': 'Generic Access', '1801': 'Generic Attribute', '1802': 'Immediate Alert', '1803': 'Link Loss',
    '1804': 'Tx Power', '1805': 'Current Time', '1808': 'Glucose', '1809': 'Health Thermometer',
    '180a': 'Device Information', '180d': 'Heart Rate', '180f': 'Battery Service', '1810': 'Blood Pressure',
    '1812': 'Human Interface Device', '1814': 'Running Speed and Cadence', '1816': 'Cycling Speed and Cadence',
    '1818': 'Cycling Power', '1819': 'Location and Navigation', '181a': 'Environmental Sensing',
    '181b': 'Body Composition', '181d': 'Weight Scale', '1822': 'Pulse Oximeter', '1826': 'Fitness Machine',
    'fcd2': 'BTHome', 'fe95': 'Xiaomi MiBeacon', 'feaa': 'Eddystone', 'ffe0': 'HM-10 Serial',
    '6e400001-b5a3-f393-e0a9-e50e24dcca9e': 'Nordic UART Service'
  };
  // Characteristics the add form knows: channel name, codec, Home Assistant component (docs/configuration.md).
  var KNOWN = {
    '2a37': { channel: 'heart_rate', codec: 'heart_rate_measurement', ha: 'sensor' },
    '2a19': { channel: 'battery', codec: 'battery_level', ha: 'sensor' },
    '2a6e': { channel: 'temperature', codec: 'int16', ha: 'sensor', note: 'hundredths of °C' },
    '2a6f': { channel: 'humidity', codec: 'uint16', ha: 'sensor', note: 'hundredths of %' },
    '2a6d': { channel: 'pressure', codec: 'uint32', ha: 'sensor', note: 'tenths of Pa' },
    '2a1c': { channel: 'temperature', codec: 'hex', ha: 'sensor', note: 'IEEE 11073 float, raw' },
    '2a00': { channel: 'device_name', codec: 'text', ha: 'sensor' },
    '2a24': { channel: 'model', codec: 'text', ha: 'sensor' },
    '2a25': { channel: 'serial_number', codec: 'text', ha: 'sensor' },
    '2a26': { channel: 'firmware', codec: 'text', ha: 'sensor' },
    '2a27': { channel: 'hardware', codec: 'text', ha: 'sensor' },
    '2a28': { channel: 'software', codec: 'text', ha: 'sensor' },
    '2a29': { channel: 'manufacturer', codec: 'text', ha: 'sensor' },
    'ffe1': { channel: 'serial', codec: 'text', ha: 'sensor' },
    '6e400002-b5a3-f393-e0a9-e50e24dcca9e': { channel: 'uart_rx', codec: 'text', ha: 'sensor' },
    '6e400003-b5a3-f393-e0a9-e50e24dcca9e': { channel: 'uart_tx', codec: 'text', ha: 'sensor' }
  };
  var CODECS = ['hex', 'base64', 'text', 'uint8', 'int8', 'uint16', 'int16', 'uint32', 'int32', 'uint16be',
    'int16be', 'uint32be', 'int32be', 'float32', 'float64', 'float32be', 'float64be', 'bool', 'battery_level',
    'heart_rate_measurement'];
  var DECODE_ONLY = { battery_level: true, heart_rate_measurement: true };
  var COMPONENTS = ['sensor', 'binary_sensor', 'switch', 'light', 'event'];
  function serviceName(uuid) { var s = short(uuid); return SERVICES[s] ? SERVICES[s] + ' (' + s + ')' : s; }

  // --- the API -----------------------------------------------------------------------------------------------
  function api(method, path, body) {
    var opts = { method: method, headers: {}, credentials: 'same-origin', cache: 'no-store' };
    if (method === 'POST') {
      opts.headers['Content-Type'] = 'application/json';
      if (S.csrf) opts.headers['X-CSRF-Token'] = S.csrf;
      opts.body = JSON.stringify(body || {});
    }
    return fetch(path, opts).then(function (r) {
      return r.json().then(function (d) { return d; }, function () { return null; }).then(function (d) {
        if (r.status === 401 && path !== '/api/login') locked();
        return { status: r.status, data: d };
      });
    }, function (e) { return { status: 0, data: { error: 'the bridge cannot be reached (' + e.message + ')' } }; });
  }
  function errorText(res) {
    var d = res.data;
    if (d && d.status === 'error') return d.error || 'error';
    if (d && d.error) return d.error;
    if (res.status !== 200) return 'HTTP ' + res.status;
    return null;
  }
  // A bridge API request (docs/bridge-api.md): resolves to {ok, data, error}.
  function request(verb, body) {
    return api('POST', '/api/request/' + verb, body).then(function (res) {
      var err = errorText(res);
      return err ? { ok: false, error: err } : { ok: true, data: res.data.data };
    });
  }

  // --- session, live updates ---------------------------------------------------------------------------------
  function boot() {
    api('GET', '/api/session').then(function (res) {
      var d = res.data || {};
      S.password = !!d.password;
      if (res.status !== 200) { message('The bridge answered ' + res.status + '. Reload to try again.'); return; }
      if (S.password && !d.authenticated) { locked(); return; }
      S.csrf = d.csrf || null;
      start();
    });
  }
  function message(text) { clear(main); add(main, h('p', { class: 'note', text: text })); }

  function locked() {
    S.csrf = null; S.state = null; S.log = []; S.started = false;
    if (S.es) { S.es.close(); S.es = null; }
    show(document.getElementById('nav'), false);
    show(document.getElementById('logout'), false);
    setConn('');
    if (document.getElementById('login')) return;
    var input = h('input', { id: 'password', type: 'password', name: 'password', autocomplete: 'current-password',
      required: true });
    var out = h('p', { class: 'error', role: 'alert' });
    var button = h('button', { type: 'submit', text: 'Log in' });
    var form = h('form', { id: 'login', class: 'login', 'aria-labelledby': 'login-title' },
      h('h1', { id: 'login-title', text: 'Log in' }),
      h('label', { for: 'password', text: 'Password' }), input, button, out);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      button.disabled = true; out.textContent = '';
      api('POST', '/api/login', { password: input.value }).then(function (res) {
        button.disabled = false;
        if (res.status === 200 && res.data && res.data.csrf) {
          S.csrf = res.data.csrf; input.value = ''; start();
        } else {
          out.textContent = errorText(res) || 'login failed'; input.select();
        }
      });
    });
    clear(main); add(main, form); input.focus();
  }

  function start() {
    S.started = true;
    show(document.getElementById('nav'), true);
    show(document.getElementById('logout'), S.password);
    api('GET', '/api/state').then(function (res) { if (res.status === 200 && res.data) onState(res.data); });
    api('GET', '/api/log').then(function (res) {
      if (res.status !== 200 || !res.data) return;
      var now = Date.now();
      S.log = (res.data.entries || []).map(function (e) { return stamp(e, now); });
      if (S.log.length > LOG_KEEP) S.log = S.log.slice(S.log.length - LOG_KEEP);
      if (S.view && S.view.name === 'log') render();
    });
    connect();
    render();
  }
  function stamp(e, now) { e.at = now - (e.age_s || 0) * 1000; return e; }

  function connect() {
    if (S.es) S.es.close();
    var es = new EventSource('/api/events');
    S.es = es;
    es.addEventListener('open', function () { setConn(''); });
    es.addEventListener('state', function (ev) {
      try { onState(JSON.parse(ev.data)); } catch (e) { /* a malformed event is skipped */ }
    });
    es.addEventListener('log', function (ev) {
      var e;
      try { e = JSON.parse(ev.data); } catch (x) { return; }
      S.log.push(stamp(e, Date.now()));
      if (S.log.length > LOG_KEEP) S.log.shift();
      if (S.view && S.view.name === 'log') S.view.addEntry(e);
    });
    es.addEventListener('error', function () {
      setConn('Reconnecting…');
      if (es.readyState === EventSource.CLOSED) {
        // Refused (401 after the session ended, or the bridge went away): ask again in a while.
        setTimeout(function () {
          if (S.es !== es) return;
          api('GET', '/api/session').then(function (res) {
            var d = res.data || {};
            if (res.status === 200 && d.password && !d.authenticated) locked();
            else if (S.es === es) connect();
          });
        }, 3000);
      }
    });
  }
  function setConn(text) { document.getElementById('conn').textContent = text; }

  // When a value changed, as this page saw it: the age shown when the bridge sends none (`age_s`).
  var changed = {};
  function onState(st) {
    var now = Date.now(), seen = {};
    (st.devices || []).forEach(function (d) {
      var v = d.values || {};
      Object.keys(v).forEach(function (n) {
        var k = d.name + '\u0000' + n, old = changed[k];
        seen[k] = old && old.value === v[n].value ? old : { value: v[n].value, at: S.state ? now : null };
      });
    });
    changed = seen;
    S.state = st; S.stateAt = now;
    if (S.view && S.view.update) S.view.update();
  }

  document.getElementById('logout').addEventListener('click', function () {
    api('POST', '/api/logout', {}).then(function () { locked(); });
  });

  // --- routing -----------------------------------------------------------------------------------------------
  function route() {
    var hash = location.hash || '#/devices';
    var m = /^#\/device\/(.+)$/.exec(hash);
    if (m) {
      var name;
      try { name = decodeURIComponent(m[1]); } catch (e) { name = m[1]; }
      return { name: 'device', device: name };
    }
    var r = hash.replace(/^#\//, '');
    return { name: ['devices', 'nearby', 'log', 'bridge'].indexOf(r) >= 0 ? r : 'devices' };
  }
  function render() {
    if (!S.started) return;
    var r = route();
    var nav = document.querySelectorAll('#nav a');
    for (var i = 0; i < nav.length; i++) {
      var cur = nav[i].getAttribute('href') === '#/' + r.name || (r.name === 'device' && nav[i].getAttribute('href') === '#/devices');
      if (cur) nav[i].setAttribute('aria-current', 'page'); else nav[i].removeAttribute('aria-current');
    }
    clear(main);
    S.view = VIEWS[r.name](r);
    S.view.name = r.name;
    document.title = S.view.title + ' – gattbridge';
    if (S.view.update) S.view.update();
  }
  window.addEventListener('hashchange', render);

  function deviceHref(name) { return '#/device/' + encodeURIComponent(name); }
  function devices() { return (S.state && S.state.devices) || []; }
  function fleet() { return S.state && S.state.bridge && S.state.bridge.fleet; }
  function waiting(el) { if (!S.state) { add(el, h('p', { class: 'note', text: 'Waiting for the bridge…' })); return true; } return false; }

  // A table whose rows become cards on a narrow screen: each cell carries its column's name in data-label.
  function table(caption, columns, cls) {
    var thead = h('tr');
    columns.forEach(function (c) { add(thead, h('th', { scope: 'col', text: c })); });
    var tbody = h('tbody');
    var t = h('table', { class: 'cards ' + (cls || '') }, caption ? h('caption', { class: 'sr', text: caption }) : null,
      h('thead', null, thead), tbody);
    return { el: h('div', { class: 'scroll' }, t), body: tbody, columns: columns };
  }
  function cell(label, content, cls) { return h('td', { 'data-label': label, class: cls || null }, content); }

  function valuesList(d) {
    var vals = d.values || {};
    var names = Object.keys(vals).sort();
    if (!names.length) return h('span', { class: 'muted', text: '–' });
    return h('ul', { class: 'values' }, names.map(function (n) {
      return h('li', null, h('span', { class: 'vname', text: n }), ' ', h('span', { class: 'value', text: vals[n].value }));
    }));
  }
  function valueAge(device, name, v) {
    if (v.age_s !== undefined && v.age_s !== null) return ago(since(v.age_s));
    var c = changed[device + '\u0000' + name];
    return c && c.at !== null ? ago((Date.now() - c.at) / 1000) : '–';
  }
  function stateBadge(s) { return h('span', { class: 'badge state-' + String(s).replace(/[^a-z]/g, ''), text: s }); }

  // --- Devices -----------------------------------------------------------------------------------------------
  var VIEWS = {};
  VIEWS.devices = function () {
    var box = h('div');
    add(main, h('h1', { text: 'Devices' }), box);
    return {
      title: 'Devices',
      update: function () {
        clear(box);
        if (waiting(box)) return;
        var list = devices().slice().sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
        if (!list.length) { add(box, h('p', { class: 'note', text: 'No devices yet. Add one from Nearby.' })); return; }
        var cols = ['Name', 'Address', 'Kind', 'Source', 'Adapter', 'State', 'RSSI'];
        var inFleet = !!fleet();
        if (inFleet) cols.push('Owner');
        cols.push('Last seen', 'Values');
        var t = table('Devices', cols, 'devices');
        list.forEach(function (d) {
          var row = h('tr', null,
            cell('Name', h('a', { href: deviceHref(d.name), text: d.name }), 'name'),
            cell('Address', d.address, 'mono'),
            cell('Kind', d.kind),
            cell('Source', d.source),
            cell('Adapter', d.adapter || '–'),
            cell('State', stateBadge(d.state)),
            cell('RSSI', d.rssi === null || d.rssi === undefined ? '–' : d.rssi + ' dBm', 'nowrap'));
          if (inFleet) add(row, cell('Owner', d.owner || '–'));
          add(row, cell('Last seen', ago(since(d.last_seen_s)), 'nowrap'), cell('Values', valuesList(d), 'vals'));
          add(t.body, row);
        });
        add(box, t.el);
      }
    };
  };

  // --- A device ----------------------------------------------------------------------------------------------
  VIEWS.device = function (r) {
    var name = r.device;
    var info = h('div'), vals = h('div'), controls = h('div'), actions = h('div'), errors = h('div');
    add(main, h('p', { class: 'back' }, h('a', { href: '#/devices', text: '← Devices' })),
      h('h1', { text: name }), info,
      h('section', { 'aria-labelledby': 'h-values' }, h('h2', { id: 'h-values', text: 'Values' }), vals),
      controls, actions, errors);
    var builtCommands = null, builtActions = null;

    function buildCommands(d) {
      clear(controls);
      var cmds = d.commands || [];
      if (!cmds.length) return;
      add(controls, h('h2', { id: 'h-controls', text: 'Controls' }));
      controls.setAttribute('aria-labelledby', 'h-controls');
      cmds.forEach(function (c, i) {
        var out = h('output', { class: 'result', role: 'status', 'aria-live': 'polite', 'aria-label': 'Result for ' + c.channel });
        var group = h('div', { class: 'command', role: 'group', 'aria-labelledby': 'cmd-' + i },
          h('h3', { id: 'cmd-' + i, text: c.channel }));
        function send(payload, button) {
          out.textContent = 'sending…'; out.className = 'result';
          if (button) button.disabled = true;
          api('POST', '/api/device/' + encodeURIComponent(name) + '/' + encodeURIComponent(c.channel) + '/set',
            { payload: payload }).then(function (res) {
            if (button) button.disabled = false;
            var err = errorText(res);
            out.textContent = err || 'ok';
            out.className = 'result ' + (err ? 'bad' : 'good');
          });
        }
        if (c.values && c.values.length) {
          var row = h('div', { class: 'buttons' });
          c.values.forEach(function (v) {
            var b = h('button', { type: 'button', text: v });
            b.addEventListener('click', function () { send(v, b); });
            add(row, b);
          });
          add(group, row);
        } else {
          var id = 'in-' + i;
          var input = h('input', { id: id, type: 'text', autocomplete: 'off' });
          var sb = h('button', { type: 'submit', text: 'Send' });
          var f = h('form', { class: 'inline' }, h('label', { for: id, class: 'sr', text: 'Value for ' + c.channel }),
            input, sb);
          f.addEventListener('submit', function (ev) { ev.preventDefault(); send(input.value, sb); });
          add(group, f);
        }
        add(group, out);
        add(controls, group);
      });
    }

    function buildActions(d) {
      clear(actions);
      var out = h('output', { class: 'result', role: 'status', 'aria-live': 'polite' });
      var row = h('div', { class: 'buttons' });
      var any = false;
      var encrypted = d.encrypted === true || (d.encrypted === undefined && d.kind === 'passive' && d.source !== 'advert');
      if (encrypted) {
        any = true;
        var rb = h('button', { type: 'button', text: 'Re-arm' });
        rb.addEventListener('click', function () {
          rb.disabled = true; out.textContent = 're-arming…';
          request('device/rearm', { name: name }).then(function (a) {
            rb.disabled = false;
            out.textContent = a.ok ? 'ok: its next encrypted broadcast is believed whatever its counter' : a.error;
          });
        });
        add(row, rb);
      }
      if (d.source === 'api') {
        any = true;
        var del = h('button', { type: 'button', class: 'danger', text: 'Remove' });
        var confirm = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Confirm removal', hidden: true },
          h('p', { text: 'Remove ' + name + '? The bridge stops it, clears its retained topics and deletes its saved file.' }));
        var yes = h('button', { type: 'button', class: 'danger', text: 'Yes, remove' });
        var no = h('button', { type: 'button', text: 'Cancel' });
        add(confirm, h('div', { class: 'buttons' }, yes, no));
        del.addEventListener('click', function () { show(confirm, true); yes.focus(); });
        no.addEventListener('click', function () { show(confirm, false); del.focus(); });
        yes.addEventListener('click', function () {
          yes.disabled = true; out.textContent = 'removing…';
          request('device/remove', { name: name }).then(function (a) {
            yes.disabled = false; show(confirm, false);
            out.textContent = a.ok ? 'ok: removed' : a.error;
            if (a.ok) location.hash = '#/devices';
          });
        });
        add(row, del);
        add(actions, h('h2', { text: 'Manage' }), row, confirm, out);
      } else if (any) {
        add(actions, h('h2', { text: 'Manage' }), row, out);
      }
    }

    return {
      title: name,
      update: function () {
        clear(info); clear(vals); clear(errors);
        if (waiting(info)) return;
        var d = devices().filter(function (x) { return x.name === name; })[0];
        if (!d) {
          clear(controls); clear(actions); builtCommands = builtActions = null;
          add(info, h('p', { class: 'note', text: 'The bridge has no device named ' + name + '.' }));
          return;
        }
        var fields = [['Address', d.address], ['Kind', d.kind], ['Source', d.source], ['Adapter', d.adapter || '–'],
          ['State', stateBadge(d.state)], ['RSSI', d.rssi === null || d.rssi === undefined ? '–' : d.rssi + ' dBm'],
          ['Last seen', ago(since(d.last_seen_s))]];
        if (fleet()) fields.push(['Owner', d.owner || '–']);
        var dl = h('dl', { class: 'fields' });
        fields.forEach(function (f) { add(dl, h('dt', { text: f[0] }), h('dd', null, f[1])); });
        add(info, dl);

        var chans = {};
        (d.channels || []).forEach(function (c) { chans[c.name] = c; });
        var v = d.values || {};
        var names = Object.keys(v);
        Object.keys(chans).forEach(function (n) { if (names.indexOf(n) < 0) names.push(n); });
        names.sort();
        if (!names.length) add(vals, h('p', { class: 'note', text: 'Nothing published yet.' }));
        else {
          var t = table('Values', ['Name', 'Value', 'Updated', 'Channel'], 'values-table');
          names.forEach(function (n) {
            var c = chans[n];
            add(t.body, h('tr', null, cell('Name', n, 'name'),
              cell('Value', v[n] ? v[n].value : '–', 'value'),
              cell('Updated', v[n] ? valueAge(name, n, v[n]) : '–'),
              cell('Channel', c ? c.characteristic + ' · ' + c.codec + (c.mode ? ' · ' + c.mode : '') + (c.writable ? ' · writable' : '') : 'broadcast')));
          });
          add(vals, t.el);
        }

        var sig = JSON.stringify(d.commands || []);
        if (sig !== builtCommands) { builtCommands = sig; buildCommands(d); }
        var asig = d.source + '|' + d.kind + '|' + d.encrypted;
        if (asig !== builtActions) { builtActions = asig; buildActions(d); }

        var errs = (d.errors || []).slice().reverse();
        add(errors, h('h2', { text: 'Recent errors' }));
        if (!errs.length) add(errors, h('p', { class: 'note', text: 'None.' }));
        else add(errors, h('ul', { class: 'errors' }, errs.map(function (e) {
          return h('li', null, h('span', { class: 'when', text: ago(since(e.age_s)) }), ' ', h('span', { text: e.text }));
        })));
      }
    };
  };

  // --- Nearby ------------------------------------------------------------------------------------------------
  function isBroadcaster(r) {
    if (r.measurements !== null && r.measurements !== undefined) return true;
    // An encrypted BTHome or Xiaomi broadcast decodes to nothing without its bindkey: still a broadcaster.
    return (r.services || []).some(function (u) { var s = short(u); return s === 'fcd2' || s === 'fe95'; });
  }
  function advertFormat(r) {
    var s = (r.services || []).map(short);
    if (s.indexOf('fcd2') >= 0) return 'bthome';
    if (s.indexOf('fe95') >= 0) return 'xiaomi';
    return 'auto';
  }
  function suggestName(r) {
    var base = (r.name || '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
    return base || ('ble-' + r.address.replace(/:/g, '').toLowerCase());
  }
  function measurementsText(m) {
    if (m === null || m === undefined) return '–';
    var k = Object.keys(m);
    if (!k.length) return '(no readings)';
    return k.map(function (n) {
      var v = m[n];
      return n + '=' + (v === true ? 'ON' : v === false ? 'OFF' : scalar(v));
    }).join(' ');
  }

  VIEWS.nearby = function () {
    var status = h('p', { class: 'note', role: 'status', 'aria-live': 'polite' });
    var scanBtn = h('button', { type: 'button', text: 'Scan' });
    var results = h('div'), panel = h('div', { class: 'panel-box' });
    add(main, h('h1', { text: 'Nearby' }),
      h('p', { class: 'note', text: 'What the bridge\'s adapters hear now, strongest first.' }),
      h('div', { class: 'buttons' }, scanBtn), status, results, panel);

    function paint() {
      status.textContent = S.scanning ? 'Scanning for 5 s…' : S.scanError ? S.scanError :
        S.scan ? S.scan.length + ' found' : '';
      scanBtn.disabled = S.scanning;
      clear(results);
      if (!S.scan || !S.scan.length) return;
      var t = table('Nearby devices', ['Address', 'Name', 'RSSI', 'Services', 'Measurements', ''], 'nearby');
      S.scan.forEach(function (r) {
        var b = h('button', { type: 'button', text: 'Add' });
        b.addEventListener('click', function () { openAdd(r); });
        add(t.body, h('tr', null,
          cell('Address', r.address, 'mono'),
          cell('Name', r.name === null || r.name === undefined ? '–' : r.name, 'name'),
          cell('RSSI', r.rssi === null || r.rssi === undefined ? '–' : r.rssi + ' dBm', 'nowrap'),
          cell('Services', (r.services || []).length ? h('ul', { class: 'plain' },
            (r.services || []).map(function (u) { return h('li', { text: serviceName(u) }); })) : '–'),
          cell('Measurements', measurementsText(r.measurements), 'value'),
          cell('Add', b, 'act')));
      });
      add(results, t.el);
    }

    scanBtn.addEventListener('click', function () {
      S.scanning = true; S.scanError = null; paint();
      request('scan', { duration: 5 }).then(function (a) {
        S.scanning = false;
        if (a.ok) {
          S.scan = (a.data || []).slice().sort(function (x, y) {
            var rx = x.rssi === null || x.rssi === undefined ? -999 : x.rssi;
            var ry = y.rssi === null || y.rssi === undefined ? -999 : y.rssi;
            return ry - rx;
          });
        } else S.scanError = 'Scan failed: ' + a.error;
        if (S.view === view) paint();
      });
    });

    function answer(out, a) {
      out.textContent = a.ok ? 'ok: added ' + ((a.data && a.data.name) || '') : a.error;
      out.className = 'result ' + (a.ok ? 'good' : 'bad');
    }

    function openAdd(r) {
      clear(panel);
      var title = 'Add ' + r.address + (r.name ? ' (' + r.name + ')' : '');
      var hd = h('h2', { id: 'add-title', text: title, tabindex: '-1' });
      add(panel, hd);
      if (isBroadcaster(r)) broadcasterForm(r); else inspectAndForm(r);
      hd.focus();
      if (hd.scrollIntoView) hd.scrollIntoView();
    }

    function broadcasterForm(r) {
      var out = h('output', { class: 'result', role: 'status', 'aria-live': 'polite' });
      var name = h('input', { id: 'add-name', type: 'text', required: true, value: suggestName(r), autocomplete: 'off' });
      var key = h('input', { id: 'add-bindkey', type: 'text', autocomplete: 'off', spellcheck: 'false',
        pattern: '[0-9A-Fa-f]{32}', placeholder: '32 hex digits', 'aria-describedby': 'bindkey-help' });
      var submit = h('button', { type: 'submit', text: 'Add device' });
      var f = h('form', { class: 'add', 'aria-labelledby': 'add-title' },
        h('p', { class: 'note', text: 'A broadcaster: added as a passive device, read from its advertisements (' +
          (advertFormat(r) === 'auto' ? 'in whichever format decodes' : 'format ' + advertFormat(r)) + ').' }),
        h('label', { for: 'add-name', text: 'Name' }), name,
        h('label', { for: 'add-bindkey', text: 'Bindkey (optional)' }), key,
        h('p', { id: 'bindkey-help', class: 'help', text: 'Only for an encrypted BTHome or Xiaomi device.' }),
        h('div', { class: 'buttons' }, submit), out);
      f.addEventListener('submit', function (ev) {
        ev.preventDefault();
        var body = { name: name.value.trim(), address: r.address, advert: advertFormat(r) };
        var k = key.value.replace(/\s+/g, '');
        if (k) body.bindkey = k;
        submit.disabled = true; out.textContent = 'adding…'; out.className = 'result';
        request('device/add', body).then(function (a) { submit.disabled = false; answer(out, a); });
      });
      add(panel, f);
    }

    function inspectAndForm(r) {
      var status = h('p', { class: 'note', role: 'status', 'aria-live': 'polite', text: 'Inspecting ' + r.address + ' (connecting)…' });
      add(panel, status);
      request('inspect', { address: r.address }).then(function (a) {
        if (!a.ok) {
          status.textContent = 'Inspect failed: ' + a.error; status.className = 'result bad';
          // An encrypted broadcast decodes to nothing without its key and takes no connection: offer it as one.
          var as = h('button', { type: 'button', text: 'Add as a broadcaster' });
          as.addEventListener('click', function () { as.remove(); broadcasterForm(r); });
          add(panel, h('div', { class: 'buttons' }, as));
          return;
        }
        status.remove();
        connectableForm(r, a.data || {});
      });
    }

    function connectableForm(r, info) {
      var rows = [];
      var needsPairing = !!(info.paired || info.bonded || r.paired);
      var used = {};
      var list = h('div', { class: 'chars' });
      (info.services || []).forEach(function (svc) {
        var sShort = short(svc.uuid);
        var sTitle = (svc.name || SERVICES[sShort] || 'Service') + ' (' + sShort + ')';
        var chars = (svc.characteristics || []);
        if (sShort === '1800' || sShort === '1801') return;     // GAP and GATT: the stack's own
        var t = table(sTitle, ['Characteristic', 'Properties', 'Value', 'Publish', 'Writable', 'Channel', 'Codec', 'Home Assistant', 'Values'], 'chars');
        chars.forEach(function (c) {
          var cShort = short(c.uuid);
          var props = c.properties || [];
          props.forEach(function (p) { if (/encrypt|secure|authenticated/.test(p)) needsPairing = true; });
          if (c.error && /auth|encrypt|pair/i.test(c.error)) needsPairing = true;
          var known = KNOWN[cShort] || {};
          var label = (c.name || known.name || 'Characteristic') + ' (' + cShort + ')';
          var canWrite = props.indexOf('write') >= 0 || props.indexOf('write-without-response') >= 0;
          var canRead = props.indexOf('read') >= 0 || props.indexOf('notify') >= 0 || props.indexOf('indicate') >= 0;
          var chName = known.channel || (c.name ? c.name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '') : 'char_' + cShort.slice(0, 8));
          if (used[chName]) chName += '_' + cShort.slice(0, 4);
          used[chName] = true;
          var publish = h('input', { type: 'checkbox', checked: !!KNOWN[cShort] && canRead, 'aria-label': 'Publish ' + label });
          var writable = h('input', { type: 'checkbox', disabled: !canWrite, 'aria-label': 'Writable ' + label });
          var chan = h('input', { type: 'text', value: chName, 'aria-label': 'Channel name for ' + label, autocomplete: 'off' });
          var codec = h('select', { 'aria-label': 'Codec for ' + label }, CODECS.map(function (x) { return h('option', { value: x, text: x }); }));
          codec.value = known.codec || 'hex';
          var ha = h('select', { 'aria-label': 'Home Assistant component for ' + label }, COMPONENTS.map(function (x) { return h('option', { value: x, text: x }); }));
          ha.value = known.ha || 'sensor';
          var values = h('input', { type: 'text', placeholder: 'ON=01, OFF=00', autocomplete: 'off', 'aria-label': 'Values for ' + label });
          function sync() {
            var decodeOnly = !!DECODE_ONLY[codec.value];
            if (decodeOnly) writable.checked = false;
            writable.disabled = !canWrite || decodeOnly;
            if (writable.checked) publish.checked = true;
          }
          codec.addEventListener('change', sync);
          writable.addEventListener('change', function () {
            sync();
            if (writable.checked && ha.value === 'sensor' && values.value.trim()) ha.value = 'switch';
          });
          sync();
          var value = c.value === null || c.value === undefined ? (c.error ? 'error: ' + c.error : '–') : scalar(c.value);
          add(t.body, h('tr', null,
            cell('Characteristic', h('span', null, label, known.note ? h('span', { class: 'help', text: ' ' + known.note }) : null), 'name'),
            cell('Properties', props.join(', ') || '–'),
            cell('Value', value, 'value'),
            cell('Publish', publish, 'check'), cell('Writable', writable, 'check'),
            cell('Channel', chan), cell('Codec', codec), cell('Home Assistant', ha), cell('Values', values)));
          rows.push({ svc: short(svc.uuid), chr: cShort, publish: publish, writable: writable, chan: chan, codec: codec,
            ha: ha, values: values, notify: props.indexOf('notify') >= 0 || props.indexOf('indicate') >= 0 });
        });
        if (chars.length) add(list, h('h3', { text: sTitle }), t.el);
      });
      var out = h('output', { class: 'result', role: 'status', 'aria-live': 'polite' });
      var name = h('input', { id: 'add-name', type: 'text', required: true, autocomplete: 'off', value: suggestName({ name: info.name || r.name, address: r.address }) });
      var pairBox = h('input', { id: 'add-pairing', type: 'checkbox', checked: needsPairing });
      var passkey = h('input', { id: 'add-passkey', type: 'text', inputmode: 'numeric', pattern: '[0-9]{6}',
        autocomplete: 'off', 'aria-describedby': 'passkey-help' });
      var passBox = h('div', { class: 'field' }, h('label', { for: 'add-passkey', text: 'Passkey' }), passkey,
        h('p', { id: 'passkey-help', class: 'help', text: 'Six digits, e.g. printed on the device; empty: pairs without a passkey ("just works").' }));
      show(passBox, needsPairing);
      pairBox.addEventListener('change', function () { show(passBox, pairBox.checked); });
      var submit = h('button', { type: 'submit', text: 'Add device' });
      var f = h('form', { class: 'add', 'aria-labelledby': 'add-title' },
        h('p', { class: 'note', text: 'A connectable device: choose what to publish' + (info.name ? ' from ' + info.name : '') + '.' }),
        list,
        h('label', { for: 'add-name', text: 'Name' }), name,
        h('div', { class: 'check-line' }, pairBox, h('label', { for: 'add-pairing', text: 'Needs pairing' })),
        passBox,
        h('div', { class: 'buttons' }, submit), out);
      f.addEventListener('submit', function (ev) {
        ev.preventDefault();
        var channels = [];
        var problem = null;
        rows.forEach(function (x) {
          if (!x.publish.checked && !x.writable.checked) return;
          var ch = { name: x.chan.value.trim(), characteristic: (x.svc.length === 4 && x.chr.length === 4) || x.svc.length === 36 ? x.svc + '/' + x.chr : x.chr, codec: x.codec.value };
          if (x.writable.checked) ch.writable = true;
          if (x.ha.value !== 'sensor') ch.homeassistant = x.ha.value;
          var vt = x.values.value.trim();
          if (vt) {
            var vals = {};
            vt.split(',').forEach(function (p) {
              var i = p.indexOf('=');
              if (i <= 0) { problem = 'Values of ' + ch.name + ': write name=value, separated by commas'; return; }
              vals[p.slice(0, i).trim()] = p.slice(i + 1).trim();
            });
            ch.values = vals;
          }
          channels.push(ch);
        });
        if (problem) { out.textContent = problem; out.className = 'result bad'; return; }
        if (!channels.length) { out.textContent = 'Choose at least one characteristic to publish.'; out.className = 'result bad'; return; }
        var body = { name: name.value.trim(), address: r.address, channels: channels };
        if (pairBox.checked) {
          var pk = passkey.value.trim();
          if (pk) { body.pairing = 'passkey'; body.passkey = pk; } else body.pairing = 'just_works';
        }
        submit.disabled = true; out.textContent = 'adding…'; out.className = 'result';
        request('device/add', body).then(function (a) { submit.disabled = false; answer(out, a); });
      });
      add(panel, f);
    }

    var view = { title: 'Nearby' };
    paint();
    return view;
  };

  // --- Log ---------------------------------------------------------------------------------------------------
  var RANK = { info: 0, warning: 1, error: 2 };
  VIEWS.log = function () {
    var sel = h('select', { id: 'level' },
      h('option', { value: 'all', text: 'All' }), h('option', { value: 'warning', text: 'Warning' }),
      h('option', { value: 'error', text: 'Error' }));
    sel.value = S.logLevel || 'all';
    var list = h('ol', { class: 'log', 'aria-label': 'Log entries, newest first' });
    add(main, h('h1', { text: 'Log' }),
      h('div', { class: 'filter' }, h('label', { for: 'level', text: 'Level' }), sel), list);
    function shown(e) { return sel.value === 'all' || (RANK[e.level] || 0) >= RANK[sel.value]; }
    function item(e) {
      return h('li', { class: 'lvl-' + (RANK[e.level] !== undefined ? e.level : 'info') },
        h('time', { text: clock(e.at) }), ' ',
        h('span', { class: 'level', text: e.level }), ' ',
        e.device ? h('a', { class: 'dev', href: deviceHref(e.device), text: e.device }) : null, e.device ? ' ' : null,
        h('span', { class: 'msg', text: e.message }));
    }
    function paint() {
      clear(list);
      var any = false;
      for (var i = S.log.length - 1; i >= 0; i--) if (shown(S.log[i])) { add(list, item(S.log[i])); any = true; }
      if (!any) add(list, h('li', { class: 'muted', text: 'No entries.' }));
    }
    sel.addEventListener('change', function () { S.logLevel = sel.value; paint(); });
    paint();
    return {
      title: 'Log',
      addEntry: function (e) {
        if (!shown(e)) return;
        var empty = list.querySelector('li.muted');
        if (empty) empty.remove();
        list.insertBefore(item(e), list.firstChild);
        while (list.children.length > LOG_KEEP) list.removeChild(list.lastChild);
      }
    };
  };

  // --- Bridge ------------------------------------------------------------------------------------------------
  VIEWS.bridge = function () {
    var box = h('div');
    add(main, h('h1', { text: 'Bridge' }), box);
    return {
      title: 'Bridge',
      update: function () {
        clear(box);
        if (waiting(box)) return;
        var b = S.state.bridge || {};
        var up = b.uptime_s === undefined ? null : b.uptime_s + (Date.now() - S.stateAt) / 1000;
        var dl = h('dl', { class: 'fields' });
        [['Version', b.version], ['Uptime', up === null ? '–' : duration(up)], ['MQTT', b.mqtt], ['BlueZ', b.bluez],
          ['Base topic', b.base_topic],
          ['Devices', b.devices ? b.devices.online + ' online of ' + b.devices.total : '–'],
          ['Buffer', b.buffer ? b.buffer.queued + ' queued, ' + b.buffer.dropped + ' dropped' : '–'],
          ['Broadcasts', b.adverts ? b.adverts.dropped + ' dropped, ' + b.adverts.refused + ' refused' : '–']]
          .forEach(function (f) { add(dl, h('dt', { text: f[0] }), h('dd', { text: scalar(f[1]) })); });
        if (b.bridge) add(dl, h('dt', { text: 'This bridge' }), h('dd', { text: scalar(b.bridge) }));
        add(box, dl);

        add(box, h('h2', { text: 'Adapters' }));
        var ads = b.adapters || [];
        if (!ads.length) add(box, h('p', { class: 'note', text: 'No adapter.' }));
        else {
          var t = table('Adapters', ['Name', 'Address', 'Powered', 'Discovering', 'Connections', 'Health', 'Recoveries', 'Last error'], 'adapters');
          ads.forEach(function (a) {
            add(t.body, h('tr', null, cell('Name', a.name, 'name'), cell('Address', a.address, 'mono'),
              cell('Powered', a.powered ? 'yes' : 'no'), cell('Discovering', a.discovering ? 'yes' : 'no'),
              cell('Connections', scalar(a.connections)), cell('Health', stateBadge(a.state)),
              cell('Recoveries', scalar(a.recoveries)), cell('Last error', a.last_error || '–')));
          });
          add(box, t.el);
        }

        var fl = fleet();
        add(box, h('h2', { text: 'Fleet' }));
        if (!fl) { add(box, h('p', { class: 'note', text: 'Not in a fleet: a lone bridge.' })); return; }
        add(box, h('p', null, 'Fleet member ', h('strong', { text: scalar(fl.id) })));
        var owned = {};
        devices().forEach(function (d) { var o = d.owner || '(nobody)'; (owned[o] = owned[o] || []).push(d.name); });
        var ids = [];
        var ft = table('Fleet members', ['Bridge', 'State', 'Owns'], 'fleet');
        (fl.members || []).forEach(function (m) {
          var id = typeof m === 'object' && m !== null ? (m.id || m.bridge) : m;
          ids.push(String(id));
          var st = typeof m === 'object' && m !== null ? (m.state || '–') : '–';
          add(ft.body, h('tr', null, cell('Bridge', String(id) + (String(id) === String(fl.id) ? ' (this one)' : ''), 'name'),
            cell('State', st), cell('Owns', (owned[id] || []).sort().join(', ') || '–')));
        });
        Object.keys(owned).forEach(function (o) {
          if (ids.indexOf(o) < 0) add(ft.body, h('tr', null, cell('Bridge', o, 'name'), cell('State', '–'), cell('Owns', owned[o].sort().join(', '))));
        });
        add(box, ft.el);
      }
    };
  };

  // Ages shown as "n s ago" move on between updates.
  setInterval(function () {
    if (S.view && S.view.update && (S.view.name === 'devices' || S.view.name === 'device' || S.view.name === 'bridge') && !document.hidden) S.view.update();
  }, 5000);

  boot();
})();
