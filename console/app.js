// push-server console: plain JavaScript, no framework, no build step.
//
// Rules this file keeps (docs/CONSOLE.md, "Security"):
// - Every value from the server or the user is rendered with textContent / createElement, never innerHTML:
//   device tokens, interest names, user ids and payloads come from outside.
// - The secret lives in `session` and in sessionStorage (this tab only), is sent only as
//   `Authorization: Bearer`, and never goes into a URL, a cookie, localStorage or a log line.
// - The page calls the same JSON APIs a backend would; nothing here has privileges of its own.
'use strict';

(() => {
  const STORAGE_KEY = 'push-server-console';
  const RECENT_TOKENS_KEY = 'push-server-console-tokens';
  const VIEWS = ['test-push', 'devices', 'publish', 'recent', 'overview', 'keys', 'audit'];
  // `scopes`: what the signed-in key may do, as the overview names it (the page hides what it may not).
  const session = { instance: '', secret: '', scopes: [] };
  const timers = { view: null, follow: null };
  let defaults = { topic: '', environment: 'sandbox' };
  let followedPublish = '';

  const $ = (id) => document.getElementById(id);

  // MARK: DOM helpers (text only)

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'text') node.textContent = String(value);
      else if (key === 'className') node.className = value;
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null) continue;
      node.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  function clear(node) { node.replaceChildren(); }

  function facts(list, rows) {
    clear(list);
    for (const [name, value] of rows) {
      if (value === undefined) continue;
      list.append(el('dt', { text: name }), el('dd', {}, value === null || value === '' ? '—' : value));
    }
  }

  function code(text) { return el('code', { text }); }

  /** "2026-11-30T10:49:55.319Z" → "2026-11-30 10:49:55 UTC" (server times are UTC). */
  function time(iso) {
    if (!iso) return null;
    return String(iso).replace('T', ' ').replace(/(\.\d+)?Z$/, ' UTC');
  }

  function number(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '—'; }

  /** An ISO time in this browser's time zone with its offset: "2026-11-30 11:49:55 (UTC+01:00)". */
  function localTime(iso) {
    const at = new Date(String(iso));
    if (Number.isNaN(at.getTime())) return String(iso);
    const two = (n) => String(n).padStart(2, '0');
    const offset = -at.getTimezoneOffset();
    const sign = offset < 0 ? '-' : '+';
    const zone = `UTC${sign}${two(Math.floor(Math.abs(offset) / 60))}:${two(Math.abs(offset) % 60)}`;
    return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} `
      + `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())} (${zone})`;
  }

  // The platforms as the status and overview documents name them, in display order.
  const PLATFORMS = [['apns', 'iOS (APNs)'], ['fcm', 'Android (FCM)'], ['web', 'Web'], ['unifiedpush', 'UnifiedPush'],
    ['hms', 'Huawei (HMS)']];
  // The reason a delivery gets when the instance has no credentials for its platform.
  /** What to paste to look a device up by token, per platform (the store's key for it). */
  const TOKEN_HINTS = {
    apns: 'hex token, as Xcode prints it',
    fcm: 'FCM registration token',
    web: 'subscription JSON or the Web SDK token',
    unifiedpush: '{"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}} as the app registered it',
    hms: 'HMS push token',
  };

  const NOT_CONFIGURED = { apns: 'NoAPNsCredentials', fcm: 'NoFCMCredentials', web: 'NoWebPushCredentials',
    unifiedpush: 'NoUnifiedPushConfig', hms: 'NoHMSCredentials' };

  /** Per-platform counts of a publish status; `apns.devicesRemoved` is the total minus the other platforms'. */
  function platformCounts(s) {
    const list = PLATFORMS.map(([key, label]) => {
      const p = s[key] || {};
      return { key, label, accepted: p.accepted || 0, failed: p.failed || 0, reasons: p.failedByReason || {},
        removed: p.devicesRemoved };
    });
    const others = list.filter((p) => p.key !== 'apns').reduce((n, p) => n + (p.removed || 0), 0);
    list[0].removed = Math.max(0, (s.devicesRemoved || 0) - others);
    return list;
  }

  function byteLength(text) { return new TextEncoder().encode(text).length; }

  // MARK: API

  function base() { return `/admin_api/v1/instances/${encodeURIComponent(session.instance)}`; }
  function publishBase() { return `/publish_api/v1/instances/${encodeURIComponent(session.instance)}/publishes`; }

  /** One JSON API call with the instance secret. Never throws: network failures come back as status 0. */
  async function api(method, path, body) {
    const headers = { Authorization: `Bearer ${session.secret}`, Accept: 'application/json' };
    const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error', referrerPolicy: 'no-referrer' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    try {
      const response = await fetch(path, init);
      const text = await response.text();
      let json = null;
      try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
      if (response.status === 401 && session.secret) signOut('The secret was refused; sign in again.');
      return { status: response.status, ok: response.ok, json, text };
    } catch (error) {
      return { status: 0, ok: false, json: null, text: String(error && error.message ? error.message : error) };
    }
  }

  function describe(result) {
    if (result.status === 0) return `Could not reach the server (${result.text}).`;
    if (result.json && typeof result.json.error === 'string') {
      return `${result.status} ${result.json.error}: ${result.json.description || ''}`;
    }
    return `${result.status}: ${result.text.slice(0, 300)}`;
  }

  // MARK: Sign-in

  async function signIn(instance, secret, remembered) {
    session.instance = instance.trim();
    session.secret = secret.trim();
    const result = await api('GET', `${base()}/console/overview`);
    if (!result.ok) {
      session.instance = '';
      session.secret = '';
      sessionStorage.removeItem(STORAGE_KEY);
      $('signin-error').textContent = remembered ? '' : describe(result);
      return false;
    }
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ instance: session.instance, secret: session.secret }));
    const signedIn = (result.json && result.json.session) || {};
    session.scopes = Array.isArray(signedIn.scopes) ? signedIn.scopes.map(String) : [];
    applyInstanceDefaults(result.json);
    $('nav-audit').hidden = !canAdminister();
    $('signin-view').hidden = true;
    $('app').hidden = false;
    $('whoami').hidden = false;
    $('whoami-id').textContent = session.instance;
    $('secret').value = '';
    $('signin-error').textContent = '';
    showView(currentView(), 'field');
    return true;
  }

  function signOut(message) {
    session.instance = '';
    session.secret = '';
    session.scopes = [];
    hideNewKey();
    clearAudit();
    sessionStorage.removeItem(STORAGE_KEY);
    stopTimers();
    followedPublish = '';
    $('app').hidden = true;
    $('whoami').hidden = true;
    $('signin-view').hidden = false;
    $('signin-error').textContent = message || '';
    document.title = 'Sign in · push-server console';
    $('instance').focus();
  }

  function applyInstanceDefaults(overview) {
    const instance = (overview && overview.instance) || {};
    defaults = { topic: instance.topic || '', environment: instance.defaultEnvironment || 'sandbox' };
    $('tp-topic').placeholder = defaults.topic ? `${defaults.topic} (configured)` : 'The configured bundle id';
    const radio = $(`tp-env-${defaults.environment}`);
    if (radio) radio.checked = true;
  }

  // MARK: Views

  function currentView() {
    const name = location.hash.slice(1);
    return VIEWS.includes(name) ? name : 'test-push';
  }

  function stopTimers() {
    if (timers.view) clearInterval(timers.view);
    if (timers.follow) clearTimeout(timers.follow);
    timers.view = null;
    timers.follow = null;
  }

  /** Shows one view. `focus`: 'field' after sign-in (the first input), 'heading' after navigation. */
  function showView(name, focus) {
    if (timers.view) clearInterval(timers.view);
    timers.view = null;
    for (const view of VIEWS) $(`view-${view}`).hidden = view !== name;
    for (const link of document.querySelectorAll('nav a')) {
      if (link.getAttribute('href') === `#${name}`) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    const section = $(`view-${name}`);
    document.title = `${section.dataset.title} · push-server console`;
    if (name === 'recent') { loadRecent(); timers.view = setInterval(loadRecent, 5000); }
    if (name === 'overview') { loadOverview(); timers.view = setInterval(loadOverview, 10000); }
    if (name === 'publish') updatePublishPreview();
    if (name === 'keys') loadKeys();
    if (name === 'audit') { audit.cursors = ['0']; loadAudit(); }
    if (focus === 'field') {
      const first = section.querySelector('input:not([type="radio"]), select, textarea, button');
      if (first) first.focus();
    } else if (focus === 'heading') {
      section.querySelector('h1').focus();
    }
  }

  // MARK: Test push

  function normalizeToken(raw) { return raw.replace(/[<>\s]/g, '').toLowerCase(); }

  function tokenProblem(token) {
    if (!token) return 'Enter a device token.';
    if (!/^[0-9a-f]*$/.test(token)) return 'The token must be hexadecimal (0-9, a-f).';
    if (token.length % 2 !== 0) return 'The token must have an even number of hex digits.';
    if (token.length < 16 || token.length > 400) return 'The token must have 16 to 400 hex digits.';
    return '';
  }

  function testPlatform() { return $('tp-platform').value; }
  // The APNs token hint as the page has it (with its link to Devices), put back when APNs is chosen again.
  let apnsTokenInfo = [];

  /** Shows the controls of the chosen platform: APNs' headers and payload, or the other platforms' text and data. */
  function updateTestPlatform() {
    const platform = testPlatform();
    const apns = platform === 'apns';
    $('tp-apns-fields').hidden = !apns;
    $('tp-plain-fields').hidden = apns;
    const byId = $('tp-by').value === 'id';
    const name = (PLATFORMS.find(([key]) => key === platform) || [platform, platform])[1];
    $('tp-token').labels[0].textContent = byId ? 'Device id' : (apns ? 'Device token' : `${name} token`);
    const info = $('tp-token-info');
    if (byId) info.textContent = `The id the ${name} device got when it registered (as the Devices screen shows it).`;
    else if (apns) info.replaceChildren(...apnsTokenInfo.map((node) => node.cloneNode(true)));
    else info.textContent = `The registered device's ${TOKEN_HINTS[platform]}; look it up under Devices to check it.`;
    if (apns && !byId) updateTokenInfo();
  }

  function updateTokenInfo() {
    if (testPlatform() !== 'apns' || $('tp-by').value !== 'token') return;
    const token = normalizeToken($('tp-token').value);
    const info = $('tp-token-info');
    if (!token) return;
    const problem = tokenProblem(token);
    info.textContent = problem
      ? `${token.length} characters. ${problem}`
      : `${token.length} hex digits (${token.length / 2} bytes).`;
  }

  function selected(name) {
    const input = document.querySelector(`input[name="${name}"]:checked`);
    return input ? input.value : '';
  }

  /** The payload text as it will be sent, plus problems (block sending) and warnings (APNs may refuse). */
  function testPayload() {
    const problems = [];
    const warnings = [];
    let text;
    let object = null;
    if (selected('tp-mode') === 'json') {
      text = $('tp-json').value;
      try { object = JSON.parse(text); } catch (error) { problems.push(`The payload is not valid JSON (${error.message}).`); }
      if (object !== null && (typeof object !== 'object' || Array.isArray(object))) {
        problems.push('The payload must be a JSON object.');
        object = null;
      }
    } else {
      const alert = {};
      if ($('tp-title').value) alert.title = $('tp-title').value;
      if ($('tp-body').value) alert.body = $('tp-body').value;
      const aps = { alert };
      if ($('tp-sound').value) aps.sound = $('tp-sound').value;
      if ($('tp-badge').value) {
        const badge = Number($('tp-badge').value);
        if (!Number.isInteger(badge) || badge < 0) problems.push('The badge must be a whole number.');
        else aps.badge = badge;
      }
      object = { aps };
      text = JSON.stringify(object);
    }
    const type = $('tp-type').value;
    const priority = $('tp-priority').value;
    const aps = object && typeof object.aps === 'object' && object.aps !== null ? object.aps : null;
    if (object && !aps) warnings.push('There is no "aps" object: iOS shows nothing.');
    const background = type === 'background' ||
      (!type && aps && aps['content-available'] === 1 && !('alert' in aps) && !('sound' in aps) && !('badge' in aps));
    if (background && priority === '10') warnings.push('Background pushes must use priority 5 or 1: APNs refuses priority 10.');
    if (type === 'background' && aps && aps['content-available'] !== 1) warnings.push('A background push needs "content-available": 1.');
    if (type === 'background' && aps && ('alert' in aps || 'sound' in aps || 'badge' in aps)) {
      warnings.push('A background push must not have alert, sound or badge.');
    }
    const bytes = byteLength(text);
    const limit = type === 'voip' ? 5120 : 4096;
    if (bytes > limit) problems.push(`The payload is ${bytes} bytes; APNs takes at most ${limit}.`);
    return { text, bytes, limit, problems, warnings };
  }

  function updatePayloadInfo() {
    const json = selected('tp-mode') === 'json';
    $('tp-alert-fields').hidden = json;
    $('tp-json-fields').hidden = !json;
    const payload = testPayload();
    const info = $('tp-payload-info');
    clear(info);
    info.append(`${payload.bytes} of ${payload.limit} bytes.`);
    for (const text of [...payload.problems, ...payload.warnings]) info.append(' ', el('span', { className: 'warning', text }));
  }

  function template(name) {
    const templates = {
      alert: ['', '', { aps: { alert: { title: 'Hello', body: 'A test from push-server' }, sound: 'default' } }],
      background: ['background', '5', { aps: { 'content-available': 1 }, data: { refresh: true } }],
      data: ['alert', '10', { aps: { alert: { title: 'Order shipped', body: 'Tap to track it' } }, data: { orderId: '1234' } }],
    };
    const [type, priority, payload] = templates[name];
    $('tp-mode-json').checked = true;
    $('tp-type').value = type;
    $('tp-priority').value = priority;
    $('tp-json').value = JSON.stringify(payload, null, 2);
    updatePayloadInfo();
  }

  function rememberToken(token) {
    let tokens = [];
    try { tokens = JSON.parse(sessionStorage.getItem(RECENT_TOKENS_KEY) || '[]'); } catch (_) { tokens = []; }
    if (!Array.isArray(tokens)) tokens = [];
    tokens = [token, ...tokens.filter((t) => t !== token)].slice(0, 10);
    sessionStorage.setItem(RECENT_TOKENS_KEY, JSON.stringify(tokens));
    renderRecentTokens(tokens);
  }

  function renderRecentTokens(tokens) {
    const list = $('tp-recent');
    clear(list);
    for (const token of tokens) if (typeof token === 'string') list.append(el('option', { value: token }));
  }

  /** The body of a test push to a non-APNs device (or any device by id): the device and title, body and data. */
  function plainTestPushBody() {
    const platform = testPlatform();
    const raw = $('tp-token').value.trim();
    if (!raw) return { problem: $('tp-by').value === 'id' ? 'Enter a device id.' : 'Enter the device\'s token.' };
    const body = $('tp-by').value === 'id' ? { deviceId: raw } : { platform, deviceToken: raw };
    if (platform === 'apns') return { body };
    if ($('tp-plain-title').value) body.title = $('tp-plain-title').value;
    if ($('tp-plain-body').value) body.body = $('tp-plain-body').value;
    const data = $('tp-plain-data').value.trim();
    if (data) {
      let object;
      try { object = JSON.parse(data); } catch (e) { return { problem: `The data is not valid JSON (${e.message}).` }; }
      if (object === null || typeof object !== 'object' || Array.isArray(object)) return { problem: 'The data must be a JSON object.' };
      body.data = object;
    }
    return { body };
  }

  async function sendTestPush(event) {
    event.preventDefault();
    const error = $('tp-error');
    const result = $('tp-result');
    error.textContent = '';
    if (testPlatform() !== 'apns') {
      const { body, problem } = plainTestPushBody();
      if (problem) {
        error.textContent = problem;
        $('tp-token').focus();
        return;
      }
      await postTestPush(body, null);
      return;
    }
    if ($('tp-by').value === 'id') {
      const { body, problem } = plainTestPushBody();
      if (problem) {
        error.textContent = problem;
        $('tp-token').focus();
        return;
      }
      const payload = testPayload();
      if (payload.problems.length) {
        error.textContent = payload.problems.join(' ');
        return;
      }
      body.payload = payload.text;
      await postTestPush(body, null);
      return;
    }
    const token = normalizeToken($('tp-token').value);
    const problem = tokenProblem(token);
    const payload = testPayload();
    if (problem || payload.problems.length) {
      error.textContent = [problem, ...payload.problems].filter(Boolean).join(' ');
      (problem ? $('tp-token') : $('tp-send')).focus();
      return;
    }
    const environment = selected('tp-env');
    if (environment === 'production' &&
        !window.confirm('Send a real notification through the production APNs environment?')) return;
    const body = { deviceToken: token, environment, payload: payload.text };
    if ($('tp-type').value) body.pushType = $('tp-type').value;
    if ($('tp-priority').value) body.priority = Number($('tp-priority').value);
    if ($('tp-topic').value.trim()) body.topic = $('tp-topic').value.trim();
    if ($('tp-collapse').value) body.collapseId = $('tp-collapse').value;
    if ($('tp-expiration').value.trim()) {
      const expiration = Number($('tp-expiration').value.trim());
      if (!Number.isInteger(expiration) || expiration < 0) {
        error.textContent = 'Expiration must be UNIX seconds (a whole number).';
        $('tp-expiration').focus();
        return;
      }
      body.expiration = expiration;
    }
    await postTestPush(body, token);
  }

  /** Sends a test push body and shows the answer; `token` (APNs) is offered again in this tab. */
  async function postTestPush(body, token) {
    const error = $('tp-error');
    const result = $('tp-result');
    const button = $('tp-send');
    button.disabled = true;
    result.dataset.done = '0';
    clear(result);
    result.append(el('p', { className: 'verdict busy', text: 'Sending…' }));
    const response = await api('POST', `${base()}/console/test-push`, body);
    button.disabled = false;
    clear(result);
    if (!response.ok || !response.json) {
      error.textContent = describe(response);
      result.dataset.done = '1';
      return;
    }
    if (token) rememberToken(token);
    if (response.json.platform === 'apns') renderTestPush(response.json, result);
    else renderPlatformTestPush(response.json, result);
    result.dataset.done = '1';
  }

  const PROVIDERS = { fcm: 'FCM', web: 'the push service', unifiedpush: 'the push server', hms: 'Huawei' };

  function platformVerdict(r) {
    const answer = r.answer || {};
    const provider = PROVIDERS[r.platform] || r.platform;
    const accepted = answer.status && answer.status >= 200 && answer.status < 300 && !answer.reason;
    if (accepted) return ['ok', `HTTP ${answer.status} · Accepted by ${provider}`];
    if (r.platform === 'hms' && answer.status === 200) return ['bad', `FAILED · Huawei ${answer.reason}`];
    if (answer.status) return ['bad', `FAILED · HTTP ${answer.status} ${answer.reason || ''}`.trim()];
    if (answer.reason) return ['bad', `NOT SENT · ${answer.reason}`];
    return ['bad', `NO ANSWER from ${provider}`];
  }

  /** The answer of FCM, a push service or Huawei, and what it did to the device. */
  function renderPlatformTestPush(r, container) {
    const answer = r.answer || {};
    const [kind, text] = platformVerdict(r);
    container.append(el('p', { className: `verdict ${kind}`, id: 'tp-verdict', text }));
    const list = el('dl', { className: 'facts', id: 'tp-facts' });
    const platformName = (PLATFORMS.find(([key]) => key === r.platform) || [r.platform, r.platform])[1];
    facts(list, [
      ['Platform', platformName],
      ['Status', answer.status === null ? null : String(answer.status)],
      ['Reason', answer.reason],
      ['Meaning', answer.meaning || undefined],
      ['Message id', answer.messageId ? code(answer.messageId) : undefined],
      ['Failure', answer.failure || undefined],
      ['Attempts', answer.attempts === null ? undefined : String(answer.attempts)],
      ['Device removed', r.deviceRemoved ? 'Yes: the provider says the token is dead; the invalidation feed and webhook report it'
        : 'No'],
      ['Latency', `${r.latencyMs} ms`],
      r.endpoint ? ['Endpoint', code(r.endpoint)] : ['Token', r.deviceToken ? code(r.deviceToken) : undefined],
      ['Payload', `${r.payloadBytes} bytes`],
    ]);
    container.append(list);
    if (r.device) {
      container.append(el('p', {}, 'Device ', code(r.device.id), ` (${r.device.valid ? 'valid' : 'INVALID'}). `,
        'The result is its last delivery, as after a publish.'));
    }
    container.append(el('p', { className: 'note', text:
      'An accepted answer means the provider took the notification, not that the device displayed it.' }));
  }

  function verdictFor(answer) {
    if (answer.status === 200) return ['ok', 'HTTP 200 · Accepted by APNs'];
    if (answer.status) return ['bad', `FAILED · HTTP ${answer.status} ${answer.reason || ''}`.trim()];
    if (answer.reason) return ['bad', `NOT SENT · ${answer.reason}`];
    return ['bad', 'NO ANSWER from APNs'];
  }

  function renderTestPush(r, container) {
    const answer = r.answer || {};
    const [kind, text] = verdictFor(answer);
    container.append(el('p', { className: `verdict ${kind}`, id: 'tp-verdict', text }));
    const list = el('dl', { className: 'facts', id: 'tp-facts' });
    let timestamp;
    if (answer.timestamp !== null && answer.timestamp !== undefined) {
      timestamp = `${answer.timestamp} (${time(answer.timestampISO)})`;
    }
    let registeredAfter;
    if (r.device && r.device.registeredAfterTimestamp !== null && r.device.registeredAfterTimestamp !== undefined) {
      registeredAfter = r.device.registeredAfterTimestamp
        ? 'Yes: the app registered this token again after it, so it stays valid'
        : 'No: the token is dead until the app registers again';
    }
    facts(list, [
      ['Status', answer.status === null ? null : String(answer.status)],
      ['Reason', answer.reason],
      ['Meaning', answer.meaning || undefined],
      ['apns-id', answer.apnsId ? code(answer.apnsId) : null],
      ['apns-unique-id', answer.apnsUniqueId ? code(answer.apnsUniqueId) : (r.environment === 'sandbox' ? null : 'Only in the sandbox')],
      ['Timestamp (410)', timestamp],
      ['Registered after it', registeredAfter],
      ['Failure', answer.failure || undefined],
      ['Attempts', answer.attempts === null ? undefined : String(answer.attempts)],
      ['Latency', `${r.latencyMs} ms`],
      ['Environment', r.environment],
      ['APNs host', code(r.apnsHost)],
      ['Topic', code(r.topic)],
      ['Push type', r.pushType],
      ['Priority', r.priority === null ? 'Default (10)' : String(r.priority)],
      ['Payload', `${r.payloadBytes} bytes`],
      ['Key id / Team id', `${r.keyId} / ${r.teamId}`],
    ]);
    container.append(list);
    if (r.device) {
      const last = r.device.lastDelivery;
      container.append(el('p', {},
        'This token belongs to device ', code(r.device.id),
        ` (${r.device.environment}, ${r.device.valid ? 'valid' : 'INVALID'}; last result: `,
        last ? `${last.status} ${last.reason || ''} at ${time(last.at)}`.replace('  ', ' ') : 'none yet', ').'));
    } else {
      container.append(el('p', { text: 'This token is not registered with this instance.' }));
    }
    container.append(el('p', { className: 'note', text:
      '200 means Apple accepted the notification, not that the phone displayed it. Delivery reports sent by the app ' +
      '(the reporting API) are the evidence that it arrived.' }));
  }

  // MARK: Devices

  async function lookUp(event) {
    event.preventDefault();
    const by = $('dev-by').value;
    const raw = $('dev-value').value.trim();
    const result = $('dev-result');
    clear(result);
    result.dataset.done = '0';
    if (!raw) {
      result.append(el('p', { className: 'error', text: 'Enter a value to look up.' }));
      result.dataset.done = '1';
      $('dev-value').focus();
      return;
    }
    let path;
    const platform = $('dev-platform').value;
    if (by === 'token') {
      // APNs tokens are hex (spaces and <> pasted from Xcode logs are dropped); FCM and web tokens are opaque.
      const token = platform === 'apns' ? normalizeToken(raw) : raw;
      path = `${base()}/devices?token=${encodeURIComponent(token)}&platform=${encodeURIComponent(platform)}`;
    }
    else if (by === 'id') path = `${base()}/devices/${encodeURIComponent(raw)}`;
    else path = `${base()}/users/${encodeURIComponent(raw)}`;
    const response = await api('GET', path);
    if (!response.ok || !response.json) {
      result.append(el('p', { className: 'error', text: describe(response) }));
      result.dataset.done = '1';
      return;
    }
    const devices = by === 'user' ? (response.json.devices || []) : [response.json];
    if (devices.length === 0) result.append(el('p', { text: `User ${raw} has no devices.` }));
    else if (by === 'user') result.append(el('p', { text: `User ${raw} has ${devices.length} device${devices.length === 1 ? '' : 's'}.` }));
    for (const device of devices) result.append(deviceCard(device));
    result.dataset.done = '1';
  }

  // Why the push service declared the device dead: its last answer, which is the one that invalidated it (an
  // invalid device is not sent to again until the app registers).
  // Huawei answers HTTP 200 with its own result code, which is the part worth showing.
  function invalidCause(last, platform) {
    if (!last || last.status === 0) return '';
    if (platform === 'hms') return ` (Huawei answered ${last.status === 200 && last.reason ? last.reason : answerText(last)})`;
    return ` (the push service answered ${answerText(last)})`;
  }

  function answerText(last) {
    return `${last.status}${last.reason ? ` ${last.reason}` : ''}`;
  }

  // A web or UnifiedPush token is the subscription (endpoint and keys); the endpoint is what identifies it to a
  // person, and the keys are the subscriber's, not worth showing.
  function subscriptionEndpoint(d) {
    if (d.platform !== 'web' && d.platform !== 'unifiedpush') return undefined;
    try {
      const subscription = JSON.parse(d.token);
      return typeof subscription.endpoint === 'string' ? subscription.endpoint : undefined;
    } catch (error) {
      return undefined;
    }
  }

  function deviceCard(d) {
    const card = el('article', { className: 'card device-card' });
    card.append(el('h2', {}, 'Device ', code(d.id)));
    card.append(el('p', { className: `verdict ${d.valid ? 'ok' : 'bad'}`,
      text: d.valid ? 'VALID · publishes reach it' : `INVALID since ${time(d.invalidatedAt)}${invalidCause(d.lastDelivery, d.platform)} · skipped until the app registers again` }));
    const last = d.lastDelivery;
    let lastText = 'None yet';
    if (last) {
      lastText = last.status === 0 ? `Not sent: ${last.reason || 'unknown'} at ${time(last.at)}`
        : `${last.status}${last.reason ? ` ${last.reason}` : ''} at ${time(last.at)}`;
    }
    const list = el('dl', { className: 'facts' });
    const platformName = (PLATFORMS.find(([key]) => key === d.platform) || [d.platform, d.platform])[1];
    const endpoint = subscriptionEndpoint(d);
    facts(list, [
      ['Platform', platformName],
      ['Environment', d.platform === 'apns'
        ? `${d.environment}${d.environmentDeclared ? ' (declared by the app)' : ' (server default)'}` : undefined],
      endpoint !== undefined ? ['Endpoint', code(endpoint)] : ['Token', code(d.token)],
      ['Bundle id', d.platform === 'apns' ? d.bundleIdentifier : undefined],
      ['User', d.userId],
      ['Interests', Array.isArray(d.interests) ? (d.interests.join(', ') + (d.moreInterests ? ', …' : '')) : undefined],
      ['Registered', time(d.createdAt)],
      ['Last registration', time(d.lastRegisteredAt)],
      ['Last delivery', lastText],
      ['Metadata', code(JSON.stringify(d.metadata || {}))],
    ]);
    card.append(list);
    const use = el('button', { type: 'button', text: 'Use for a test push' });
    use.addEventListener('click', () => {
      $('tp-platform').value = d.platform;
      if (d.platform === 'apns') {
        $('tp-by').value = 'token';
        $('tp-token').value = d.token;
        const radio = $(`tp-env-${d.environment}`);
        if (radio) radio.checked = true;
      } else {
        $('tp-by').value = 'id';
        $('tp-token').value = d.id;
      }
      $('tp-device-info').textContent = `Device ${d.id} · ${platformName}${d.valid ? '' : ' · INVALID'}`;
      updateTestPlatform();
      location.hash = '#test-push';
    });
    card.append(use);
    return card;
  }

  async function countSubscribers(event) {
    event.preventDefault();
    const name = $('int-name').value.trim();
    const result = $('int-result');
    result.textContent = '';
    if (!name) { result.textContent = 'Enter an interest name.'; return; }
    const response = await api('GET', `${base()}/interests/${encodeURIComponent(name)}`);
    result.textContent = response.ok && response.json
      ? `${response.json.interest}: ${number(response.json.subscribers)} subscribed device${response.json.subscribers === 1 ? '' : 's'} (valid ones).`
      : describe(response);
  }

  /** The instance's iOS 18 broadcast channels, as APNs lists them (docs/API.md "Broadcast channels"). */
  async function listChannels(event) {
    event.preventDefault();
    const result = $('ch-result');
    clear(result);
    result.removeAttribute('data-done');
    const response = await api('GET', `/publish_api/v1/instances/${encodeURIComponent(session.instance)}/channels`);
    const channels = response.ok && response.json && Array.isArray(response.json.channels) ? response.json.channels : null;
    if (!channels) {
      result.append(el('p', { text: describe(response) }));
    } else if (channels.length === 0) {
      result.append(el('p', { text: 'No broadcast channels yet (POST …/channels creates one).' }));
    } else {
      result.append(el('p', { text: `${number(channels.length)} channel${channels.length === 1 ? '' : 's'}:` }),
        el('ul', { id: 'ch-list' }, ...channels.map((id) => el('li', {}, code(String(id))))));
    }
    result.setAttribute('data-done', '1');
  }

  // MARK: Publish

  function publishKind() { return selected('pub-kind') || 'interests'; }

  function publishTargets() {
    return $('pub-targets').value.split(',').map((s) => s.trim()).filter(Boolean);
  }

  /** The request body exactly as it will be sent, or a problem. */
  function publishBody() {
    const kind = publishKind();
    if (selected('pub-mode') === 'json') {
      const text = $('pub-json').value;
      let object;
      try { object = JSON.parse(text); } catch (error) { return { problem: `The body is not valid JSON (${error.message}).`, text }; }
      if (!object || typeof object !== 'object' || Array.isArray(object)) return { problem: 'The body must be a JSON object.', text };
      return { object, text };
    }
    const alert = {};
    if ($('pub-title').value) alert.title = $('pub-title').value;
    if ($('pub-body').value) alert.body = $('pub-body').value;
    const object = { [kind]: publishTargets() };
    // The same title and body in each chosen platform's own section (docs/API.md, publish API).
    if ($('pub-to-apns').checked) object.apns = { aps: { alert } };
    if ($('pub-to-fcm').checked) object.fcm = { notification: { ...alert } };
    if ($('pub-to-web').checked) object.web = { notification: { ...alert } };
    if ($('pub-to-unifiedpush').checked) object.unifiedpush = { notification: { ...alert } };
    if ($('pub-to-hms').checked) object.hms = { notification: { ...alert } };
    if (!object.apns && !object.fcm && !object.web && !object.unifiedpush && !object.hms) return { problem: 'Choose at least one platform.', text: JSON.stringify(object) };
    return { object, text: JSON.stringify(object) };
  }

  function shellQuote(text) { return `'${text.replace(/'/g, `'\\''`)}'`; }

  function updatePublishPreview() {
    const kind = publishKind();
    const json = selected('pub-mode') === 'json';
    $('pub-targets-label').textContent = kind === 'users' ? 'User ids (comma-separated)' : 'Interests (comma-separated)';
    $('pub-form-fields').hidden = json;
    $('pub-json-fields').hidden = !json;
    $('pub-targets').closest('.field').hidden = json;
    const body = publishBody();
    const bytes = byteLength(body.text);
    const limit = kind === 'users' ? 200 * 1024 : 10 * 1024;
    const size = $('pub-size');
    clear(size);
    size.append(`${number(bytes)} of ${number(limit)} bytes (${kind === 'users' ? '200 KiB for users' : '10 KiB for interests'}).`);
    if (bytes > limit) size.append(' ', el('span', { className: 'warning', text: 'Too large: the server answers 400.' }));
    if (body.problem) size.append(' ', el('span', { className: 'warning', text: body.problem }));
    $('pub-preview').textContent = body.object ? JSON.stringify(body.object, null, 2) : body.text;
    const url = `${location.origin}${publishBase()}/${kind}`;
    $('pub-curl').textContent =
      `curl -X POST ${shellQuote(url)} \\\n` +
      '  -H "Authorization: Bearer $SECRET" \\\n' +
      "  -H 'Content-Type: application/json' \\\n" +
      `  -d ${shellQuote(body.object && !json ? JSON.stringify(body.object) : body.text)}`;
  }

  function switchPublishMode() {
    if (selected('pub-mode') === 'json' && !$('pub-json').value.trim()) {
      const kind = publishKind();
      const alert = { title: $('pub-title').value, body: $('pub-body').value };
      $('pub-json').value = JSON.stringify({ [kind]: publishTargets(), apns: { aps: { alert } } }, null, 2);
    }
    updatePublishPreview();
  }

  async function publish(event) {
    event.preventDefault();
    const error = $('pub-error');
    const output = $('pub-response');
    error.textContent = '';
    const body = publishBody();
    if (body.problem) { error.textContent = body.problem; return; }
    const kind = publishKind();
    const button = $('pub-send');
    button.disabled = true;
    clear(output);
    const response = await api('POST', `${publishBase()}/${kind}`, body.text);
    button.disabled = false;
    output.append(el('p', { className: `verdict ${response.ok ? 'ok' : 'bad'}`,
      text: response.ok ? `HTTP ${response.status} · accepted` : `HTTP ${response.status} · refused` }));
    output.append(el('pre', { className: 'code', id: 'pub-response-body', text: response.text || '(empty body)' }));
    if (!response.ok || !response.json || !response.json.publishId) {
      error.textContent = describe(response);
      return;
    }
    follow(response.json.publishId);
  }

  /** Polls one publish until it is finished or failed. */
  function follow(publishId) {
    followedPublish = publishId;
    if (timers.follow) clearTimeout(timers.follow);
    const section = $('pub-follow');
    section.hidden = false;
    section.dataset.state = 'queued';
    $('pub-follow-h').textContent = `Publish ${publishId}`;
    $('pub-state').textContent = 'Waiting for the first status…';
    $('pub-state').className = 'verdict busy';
    const started = Date.now();
    const poll = async () => {
      if (followedPublish !== publishId || !session.secret) return;
      const response = await api('GET', `${publishBase()}/${encodeURIComponent(publishId)}`);
      if (followedPublish !== publishId) return;
      if (response.ok && response.json) renderPublishStatus(response.json);
      else $('pub-state').textContent = describe(response);
      const status = response.json && response.json.status;
      const done = status === 'finished' || status === 'failed';
      if (!done && Date.now() - started < 30 * 60 * 1000) timers.follow = setTimeout(poll, 500);
    };
    poll();
  }

  function renderPublishStatus(s) {
    const apns = s.apns || {};
    const platforms = platformCounts(s);
    const accepted = platforms.reduce((n, p) => n + p.accepted, 0);
    const failed = platforms.reduce((n, p) => n + p.failed, 0);
    const targets = s.targets || 0;
    const state = $('pub-state');
    const status = String(s.status || '').toUpperCase();
    if (s.status === 'finished') {
      state.className = `verdict ${failed ? 'bad' : 'ok'}`;
      state.textContent = `FINISHED · ${number(accepted)} accepted, ${number(failed)} failed` +
        (s.durationMs !== undefined ? ` in ${number(s.durationMs)} ms` : '');
    } else if (s.status === 'failed') {
      state.className = 'verdict bad';
      state.textContent = `FAILED · ${s.summary || 'the publish could not run'}`;
    } else {
      state.className = 'verdict busy';
      state.textContent = `${status} · ${number(accepted + failed)} answered so far` + estimateText(s);
    }
    const progress = $('pub-progress');
    if (s.status === 'finished' || s.status === 'failed') {
      progress.max = Math.max(1, targets);
      progress.value = Math.max(1, targets);
    } else if (s.remainingTargets !== undefined) {
      // A running publish with an estimate: answered so far against answered plus what its runs have left.
      progress.max = Math.max(1, accepted + failed + s.remainingTargets);
      progress.value = accepted + failed;
    } else if (targets > 0) {
      progress.max = targets;
      progress.value = Math.min(targets, accepted + failed);
    } else {
      progress.removeAttribute('value');
    }
    const reports = s.reports || {};
    facts($('pub-counts'), [
      ['Publish id', code(s.publishId)],
      ['Kind', s.kind],
      ['Status', status],
      ['Devices', number(targets)],
      ['Accepted', number(accepted)],
      ['Failed', number(failed)],
      ['Devices removed', number(s.devicesRemoved)],
      ['Environment retries (APNs)', number(apns.environmentRetries)],
      ['Delivered (reported by apps)', number(reports.delivered)],
      ['Opened', number(reports.opened)],
      ['Created', time(s.createdAt)],
      ['Started', time(s.startedAt)],
      ['Finished', time(s.finishedAt)],
      ['Duration', s.durationMs === undefined ? null : `${number(s.durationMs)} ms`],
      ['Estimated completion', s.estimatedCompletionAt === undefined ? undefined : time(s.estimatedCompletionAt)],
      ['Remaining (estimate)', s.remainingTargets === undefined ? undefined :
        `${number(s.remainingTargets)} at ${s.estimateRatePerSecond} per second`],
      ['Attempts', number(s.attempts)],
      ['Summary', s.summary || undefined],
    ]);
    // Only platforms the publish had devices on: one without devices gets no row and no "not configured" note.
    const used = platforms.filter((p) => p.accepted + p.failed > 0);
    const rows = $('pub-platforms').tBodies[0];
    clear(rows);
    if (used.length === 0) rows.append(el('tr', {}, el('td', { colspan: 4, text: 'No answers yet' })));
    for (const p of used) {
      rows.append(el('tr', { 'data-platform': p.key }, el('td', { text: p.label }),
        el('td', { className: 'num', text: number(p.accepted) }), el('td', { className: 'num', text: number(p.failed) }),
        el('td', { className: 'num', text: number(p.removed) })));
    }
    const notes = $('pub-notes');
    clear(notes);
    for (const p of used) {
      const n = p.reasons[NOT_CONFIGURED[p.key]];
      if (n) {
        notes.append(el('p', { className: 'verdict bad', 'data-platform': p.key,
          text: `${p.label}: not configured for this instance · ${number(n)} ${n === 1 ? 'delivery' : 'deliveries'} recorded as not sent` }));
      }
    }
    reasonRows($('pub-reasons'), platforms);
    $('pub-follow').dataset.state = s.status || '';
  }

  /** ` · done in about 3 min (12:04:10 UTC)` for a running publish with a completion estimate, else ''. */
  function estimateText(s) {
    if (s.estimatedCompletionAt === undefined) return '';
    const seconds = Math.max(0, (Date.parse(s.estimatedCompletionAt) - Date.now()) / 1000);
    const left = seconds < 90 ? `${Math.round(seconds)} s` : seconds < 5400 ? `${Math.round(seconds / 60)} min`
      : `${(seconds / 3600).toFixed(1)} h`;
    return ` · done in about ${left} (${s.estimatedCompletionAt.slice(11, 19)} UTC)`;
  }

  /** Failures by platform and reason, most frequent first. `platforms`: [{label, reasons}]. */
  function reasonRows(table, platforms) {
    const body = table.tBodies[0];
    clear(body);
    const entries = [];
    for (const p of platforms) {
      for (const [reason, count] of Object.entries(p.reasons || {})) entries.push([p.label, reason, count]);
    }
    entries.sort((a, b) => b[2] - a[2]);
    if (entries.length === 0) body.append(el('tr', {}, el('td', { colspan: 3, text: 'None' })));
    for (const [label, reason, count] of entries) {
      body.append(el('tr', {}, el('td', { text: label }), el('td', { text: reason }),
        el('td', { className: 'num', text: number(count) })));
    }
  }

  // MARK: Recent publishes

  async function loadRecent() {
    const response = await api('GET', `${publishBase()}?limit=50`);
    const info = $('rec-info');
    if (!response.ok || !response.json) { info.textContent = describe(response); return; }
    const body = $('rec-table').tBodies[0];
    clear(body);
    const list = response.json.publishes || [];
    info.textContent = `${list.length} publish${list.length === 1 ? '' : 'es'} · updated ${new Date().toISOString().slice(11, 19)} UTC`;
    if (list.length === 0) body.append(el('tr', {}, el('td', { colspan: 8, text: 'No publishes yet.' })));
    for (const s of list) {
      const platforms = platformCounts(s);
      const accepted = platforms.reduce((n, p) => n + p.accepted, 0);
      const open = el('button', { type: 'button', text: 'Follow', 'aria-label': `Follow ${s.publishId}` });
      open.addEventListener('click', () => {
        location.hash = '#publish';
        follow(s.publishId);
      });
      const failed = platforms.reduce((n, p) => n + p.failed, 0);
      const status = String(s.status || '').toUpperCase() + (s.status === 'finished' && failed ? ' · with failures' : '');
      body.append(el('tr', { 'data-publish': s.publishId },
        el('td', { text: time(s.createdAt) }),
        el('td', { text: s.kind }),
        el('td', { text: status }),
        el('td', { className: 'num', text: number(s.targets) }),
        el('td', { className: 'num', text: number(accepted) }),
        el('td', { className: 'num', text: number(failed) }),
        el('td', { className: 'num', text: s.durationMs === undefined ? '—' : `${number(s.durationMs)} ms` }),
        el('td', {}, code(s.publishId), ' ', open)));
    }
  }

  // MARK: Overview

  /** The certificate of an instance with certificate authentication (`apnsCertificate`): none for a .p8 key. */
  function certificateFacts(cert) {
    if (!cert) return [];
    const days = cert.daysLeft === 1 ? '1 day' : `${number(cert.daysLeft)} days`;
    const expiry = cert.daysLeft < 0 ? `${time(cert.notAfter)} (expired)` : `${time(cert.notAfter)} (${days} left)`;
    return [
      ['Certificate subject', code(cert.subject)],
      ['Certificate topics', (cert.topics || []).join(', ') || null],
      ['Certificate environments', (cert.environments || []).length ? cert.environments.join(' + ') : 'none (no marker)'],
      ['Environment note', cert.environmentNote || undefined],
      ['Certificate expires', expiry],
      ['Certificate warning', cert.warning || undefined],
    ];
  }

  async function loadOverview() {
    const response = await api('GET', `${base()}/console/overview`);
    const info = $('ov-info');
    if (!response.ok || !response.json) { info.textContent = describe(response); return; }
    const o = response.json;
    info.textContent = `Updated ${new Date().toISOString().slice(11, 19)} UTC`;
    const apns = o.apns || {};
    const instance = o.instance || {};
    const state = $('ov-apns-state');
    if (instance.apnsCredentials !== 'loaded') {
      state.className = 'verdict bad';
      state.textContent = 'NO CREDENTIALS · deliveries are recorded as not sent';
    } else if (apns.state === 'reachable') {
      state.className = 'verdict ok';
      state.textContent = 'REACHABLE · APNs answered the last request';
    } else if (apns.state === 'unreachable') {
      state.className = 'verdict bad';
      state.textContent = 'UNREACHABLE · the last request got no answer';
    } else {
      state.className = 'verdict busy';
      state.textContent = 'UNKNOWN · nothing sent since the server started';
    }
    facts($('ov-apns'), [
      ['Last answer', time(apns.lastAnswerAt)],
      ['Last failure', time(apns.lastFailureAt)],
      ['Failure', apns.lastFailure || null],
      ['Connections', number(apns.connections)],
      ['Requests in flight', number(apns.streamsInFlight)],
      ['Transport failures', number(apns.transportFailures)],
      ['Credential failures', number(apns.configurationFailures)],
      ['Publish queue', number(o.store && o.store.queueDepth)],
    ]);
    const cert = instance.apnsCertificate;
    facts($('ov-instance'), [
      ['Id', code(instance.id)],
      ['APNs credentials', cert ? `${instance.apnsCredentials} · client certificate` : instance.apnsCredentials],
      ['Team id / Key id', cert ? undefined : (instance.teamId ? `${instance.teamId} / ${instance.keyId}` : null)],
      ...certificateFacts(cert),
      ['Topic', instance.topic],
      ['Default environment', instance.defaultEnvironment],
      ['Sandbox host', instance.apnsHosts ? code(instance.apnsHosts.sandbox) : null],
      ['Production host', instance.apnsHosts ? code(instance.apnsHosts.production) : null],
    ]);
    renderSender('fcm', o.fcm || {}, 'Android', [
      ['Project', o.fcm && o.fcm.projectId ? code(o.fcm.projectId) : undefined],
      ['Access token expires in', o.fcm && typeof o.fcm.accessTokenExpiresInSeconds === 'number'
        ? `${number(o.fcm.accessTokenExpiresInSeconds)} s` : undefined],
      ['Accepted since start', o.fcm && o.fcm.sent !== undefined ? number(o.fcm.sent) : undefined],
      ['Token fetch failures', o.fcm && o.fcm.accessTokenFailures !== undefined ? number(o.fcm.accessTokenFailures) : undefined],
    ]);
    renderSender('web', o.web || {}, 'Browser', [
      ['VAPID public key', o.web && o.web.vapidPublicKey ? code(o.web.vapidPublicKey) : undefined],
      ['Accepted since start', o.web && o.web.accepted !== undefined ? number(o.web.accepted) : undefined],
      ['Refused destinations', o.web && o.web.refusedDestinations !== undefined ? number(o.web.refusedDestinations) : undefined],
    ]);
    renderUnifiedPush(o.unifiedpush || {});
    renderSender('hms', o.hms || {}, 'Huawei', [
      ['App id', o.hms && o.hms.appId ? code(o.hms.appId) : undefined],
      ['Access token requests', o.hms && o.hms.accessTokenRequests !== undefined ? number(o.hms.accessTokenRequests) : undefined],
      ['Tokens taken over from another node', o.hms && o.hms.accessTokensAdopted ? number(o.hms.accessTokensAdopted) : undefined],
      ['Send requests', o.hms && o.hms.requests !== undefined ? number(o.hms.requests) : undefined],
      ['Accepted since start', o.hms && o.hms.accepted !== undefined ? number(o.hms.accepted) : undefined],
      ['Failed since start', o.hms && o.hms.failed !== undefined ? number(o.hms.failed) : undefined],
    ]);
    const devices = o.devices || {};
    const platforms = PLATFORMS.filter(([key]) => (devices.byPlatform || {})[key])
      .map(([key, label]) => `${label} ${number(devices.byPlatform[key])}`).join(', ');
    facts($('ov-devices'), [
      ['Registered', number(devices.total)],
      ['By platform', platforms || null],
      ['Invalid (skipped)', number(devices.invalid)],
    ]);
    const today = o.today || {};
    const states = Object.entries(today.byState || {}).map(([s, n]) => `${s} ${number(n)}`).join(', ');
    const todayPlatforms = PLATFORMS.map(([key, label]) => {
      const p = (today.byPlatform || {})[key] || {};
      return { key, label, accepted: p.accepted || 0, failed: p.failed || 0, reasons: p.failedByReason || {} };
    });
    if (!today.byPlatform) todayPlatforms[0] = { ...todayPlatforms[0], accepted: today.accepted || 0, reasons: today.failedByReason || {} };
    const split = todayPlatforms.filter((p) => p.accepted + p.failed > 0)
      .map((p) => `${p.label} ${number(p.accepted)} / ${number(p.failed)}`).join(', ');
    facts($('ov-today'), [
      ['Publishes', number(today.publishes)],
      ['By status', states || null],
      ['Accepted', number(todayPlatforms.reduce((n, p) => n + p.accepted, 0))],
      ['Failed', number(todayPlatforms.reduce((n, p) => n + p.failed, 0))],
      ['Accepted / failed by platform', split || null],
      ['Devices removed', number(today.devicesRemoved)],
    ]);
    reasonRows($('ov-reasons'), todayPlatforms);
    renderQuotas(o.quotas || {});
    drawChart(o.perMinute || []);
  }

  /** The quotas panel: each quota's use against its limit ("none" when unset), the daily reset, and each provider
   *  budget with what this node sent through it in the last minute and this node's share of it
   *  (docs/OPERATIONS.md "Many apps: quotas"). */
  function renderQuotas(q) {
    const used = (quota) => {
      if (!quota || quota.limit === null || quota.limit === undefined) return 'none';
      const share = quota.limit > 0 ? ` (${Math.round((100 * (quota.used || 0)) / quota.limit)} %)` : '';
      return `${number(quota.used)} of ${number(quota.limit)}${share}`;
    };
    const budgets = PLATFORMS.filter(([key]) => (q.notificationsPerMinute || {})[key]).map(([key, label]) => {
      const b = q.notificationsPerMinute[key];
      return [`${label} per minute`, `${number(b.sentLastMinute)} sent in the last minute of ${number(b.limit)} · `
        + `this node ${number(b.nodeShare)} of ${number(q.liveNodes)} node(s)`];
    });
    facts($('ov-quotas'), [
      ['Devices', used(q.devices)],
      ['Publishes today (UTC)', used(q.publishesPerDay)],
      ['Resets', q.publishesPerDay && q.publishesPerDay.limit ? time(q.publishesPerDay.resetsAt) : undefined],
      ...(budgets.length ? budgets : [['Provider budgets', 'none']]),
    ]);
  }

  /** The UnifiedPush panel: no credentials of its own (it signs with the instance's VAPID key), only its rules. */
  function renderUnifiedPush(health) {
    const state = $('ov-unifiedpush-state');
    if (health.state !== 'configured') {
      state.className = 'verdict busy';
      state.textContent = 'NOT CONFIGURED · UnifiedPush registrations are refused';
    } else {
      state.className = 'verdict ok';
      state.textContent = 'CONFIGURED · endpoints on the hosts users picked, checked at registration and at connect';
    }
    facts($('ov-unifiedpush'), [
      ['Allowed ports', Array.isArray(health.ports) ? health.ports.join(', ') : undefined],
      ['Distinct hosts at most', health.maxHosts !== undefined ? number(health.maxHosts) : undefined],
      ['Accepted since start', health.accepted !== undefined ? number(health.accepted) : undefined],
      ['Refused destinations', health.refusedDestinations !== undefined ? number(health.refusedDestinations) : undefined],
      ['Transport failures', health.transportFailures !== undefined ? number(health.transportFailures) : undefined],
      ['Requests in flight', health.requestsInFlight !== undefined ? number(health.requestsInFlight) : undefined],
    ]);
  }

  /** The FCM, Web Push or HMS panel: credentials and the problem that keeps them from working, if any. */
  function renderSender(key, health, devices, rows) {
    const state = $(`ov-${key}-state`);
    // FCM reports one problem object, Web Push a list, HMS Huawei's refusal as text.
    let problems = health.problems || [];
    if (key === 'fcm') problems = health.problem ? [health.problem] : [];
    if (key === 'hms') problems = health.problem ? [{ kind: 'Huawei refused the client id and secret', detail: health.problem }] : [];
    if (health.credentials === 'not configured') {
      state.className = 'verdict busy';
      state.textContent = `NOT CONFIGURED · ${devices} devices are accepted; deliveries to them are recorded as not sent`;
    } else if (health.credentials === 'refused') {
      const p = problems[0] || {};
      state.className = 'verdict bad';
      state.textContent = `REFUSED · ${p.kind || `HTTP ${p.status} from ${p.host}`}` + (p.count ? ` ×${number(p.count)}` : '');
    } else {
      state.className = 'verdict ok';
      state.textContent = 'CREDENTIALS LOADED · no refusal since the server started';
    }
    const problemRows = problems.map((p) => [p.host ? `Refused by ${p.host}` : 'Problem',
      `${p.detail || ''}${p.since ? ` (since ${time(p.since)})` : ''}`]);
    facts($(`ov-${key}`), [
      ...rows,
      ...problemRows,
      ['Requests in flight', health.requestsInFlight !== undefined ? number(health.requestsInFlight) : undefined],
    ]);
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** Stacked bars (accepted below, failed above), one per minute, drawn from the server's numbers. */
  function drawChart(series) {
    const box = $('ov-chart');
    clear(box);
    const width = 720;
    const height = 200;
    const left = 40;
    const right = 8;
    const top = 10;
    const bottom = 24;
    const plotWidth = width - left - right;
    const plotHeight = height - top - bottom;
    const peak = Math.max(1, ...series.map((m) => m.accepted + m.failed));
    const scaleMax = niceCeiling(peak);
    const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': 'ov-chart-h ov-chart-summary', id: 'ov-chart-svg' });
    // A middle line only where it falls on a whole number.
    for (const fraction of scaleMax % 2 === 0 ? [0, 0.5, 1] : [0, 1]) {
      const y = top + plotHeight * (1 - fraction);
      chart.append(svg('line', { x1: left, x2: width - right, y1: y, y2: y, class: fraction === 0 ? 'axis' : 'grid-line' }));
      chart.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end' }, String(Math.round(scaleMax * fraction))));
    }
    const slot = plotWidth / Math.max(1, series.length);
    const barWidth = Math.max(1, slot - 2);
    series.forEach((minute, index) => {
      const x = left + index * slot + 1;
      const okHeight = (minute.accepted / scaleMax) * plotHeight;
      const badHeight = (minute.failed / scaleMax) * plotHeight;
      const group = svg('g', { class: 'minute' });
      group.append(svg('title', {}, `${String(minute.start).slice(11, 16)} UTC: ${minute.accepted} accepted, ${minute.failed} failed`));
      if (minute.accepted > 0) group.append(svg('rect', { class: 'bar-ok', x, y: top + plotHeight - okHeight, width: barWidth, height: okHeight }));
      if (minute.failed > 0) group.append(svg('rect', { class: 'bar-bad', x, y: top + plotHeight - okHeight - badHeight, width: barWidth, height: badHeight }));
      chart.append(group);
      if (index % 15 === 0 || index === series.length - 1) {
        const last = index === series.length - 1;
        chart.append(svg('text', { x: last ? width - right : x + barWidth / 2, y: height - 6, 'text-anchor': last ? 'end' : 'middle' },
          String(minute.start).slice(11, 16)));
      }
    });
    box.append(chart);
    box.scrollLeft = box.scrollWidth;  // on a narrow screen the chart scrolls; show the newest minutes first
    const accepted = series.reduce((sum, m) => sum + m.accepted, 0);
    const failed = series.reduce((sum, m) => sum + m.failed, 0);
    const busiest = series.reduce((best, m) => (m.accepted + m.failed > (best ? best.accepted + best.failed : 0) ? m : best), null);
    const summary = $('ov-chart-summary');
    clear(summary);
    summary.append(el('span', { className: 'legend-ok', text: `${number(accepted)} accepted` }), ', ',
      el('span', { className: 'legend-bad', text: `${number(failed)} failed` }), ' in the last hour (UTC)',
      busiest ? `; busiest minute ${String(busiest.start).slice(11, 16)} with ${number(busiest.accepted + busiest.failed)}.` : '.');
  }

  function niceCeiling(n) {
    const magnitude = 10 ** Math.floor(Math.log10(n));
    for (const step of [1, 2, 5, 10]) if (step * magnitude >= n) return step * magnitude;
    return 10 * magnitude;
  }

  // MARK: Keys

  // Every call below needs `instance:admin`; the server checks it, the page only avoids offering what would be
  // refused. Key secrets are shown once (create, roll) and never kept: sign-out and "I have copied it" clear them.
  const ADMIN_SCOPE = 'instance:admin';
  function canAdminister() { return session.scopes.includes(ADMIN_SCOPE); }
  function keysBase() { return `${base()}/keys`; }

  function keysError(text) { $('keys-error').textContent = text || ''; }

  function hideNewKey() {
    $('keys-new').hidden = true;
    $('keys-new-value').textContent = '';
    $('keys-new-note').textContent = '';
    $('keys-copy-status').textContent = '';
  }

  /** Shows a new secret once, with what it replaces. */
  function showNewKey(secret, note) {
    $('keys-new-value').textContent = secret;
    $('keys-new-note').textContent = note;
    $('keys-copy-status').textContent = '';
    $('keys-new').hidden = false;
    $('keys-copy').focus();
  }

  async function copyNewKey() {
    const text = $('keys-new-value').textContent;
    try {
      await navigator.clipboard.writeText(text);
      $('keys-copy-status').textContent = 'Copied.';
    } catch (_) {
      // No clipboard access (an insecure origin, a denied permission): select it for Ctrl+C instead.
      const range = document.createRange();
      range.selectNodeContents($('keys-new-value'));
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      $('keys-copy-status').textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    }
  }

  async function loadKeys() {
    const admin = canAdminister();
    $('keys-create-form').hidden = !admin;
    $('keys-admin').hidden = !admin;
    $('keys-scope').textContent = admin ? ''
      : `Signed in with a key whose scopes are ${session.scopes.join(', ') || 'none'}: listing, creating, rolling `
        + `and revoking keys needs ${ADMIN_SCOPE}.`;
    if (!admin) { $('keys-rows').dataset.done = '1'; return; }
    const table = $('keys-rows');
    table.dataset.done = '';
    const result = await api('GET', keysBase());
    if (!result.ok) { keysError(describe(result)); table.dataset.done = '1'; return; }
    keysError('');
    renderKeys(result.json || {});
    table.dataset.done = '1';
  }

  function renderKeys(listing) {
    const rows = $('keys-rows');
    clear(rows);
    const keys = Array.isArray(listing.keys) ? listing.keys.slice() : [];
    keys.sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
    for (const key of keys) {
      const actions = el('td', {});
      const live = !key.revokedAt;
      const expired = Boolean(key.expiresAt) && Date.parse(key.expiresAt) <= Date.now();
      if (live && !expired && key.kind === 'scoped') {
        const roll = el('button', { type: 'button', className: 'small', 'data-action': 'roll', text: 'Roll' });
        roll.addEventListener('click', () => rollKey(key));
        actions.append(roll, ' ');
      }
      if (live && !(key.kind === 'beams-secret' && key.current)) {
        const revoke = el('button', { type: 'button', className: 'small', 'data-action': 'revoke', text: 'Revoke' });
        revoke.addEventListener('click', () => revokeKey(key));
        actions.append(revoke);
      }
      const kind = key.kind === 'beams-secret' ? `Beams secret${key.current ? ' (current)' : ' (previous)'}` : 'scoped';
      rows.append(el('tr', { 'data-key': key.id },
        el('td', { text: key.label || '—' }),
        el('td', {}, code(String(key.id))),
        el('td', { text: kind }),
        el('td', { text: Array.isArray(key.scopes) && key.scopes.length ? key.scopes.join(', ') : '—' }),
        el('td', { text: time(key.createdAt) || '—' }),
        el('td', { text: time(key.lastUsedAt) || 'never' }),
        el('td', { text: time(key.notBefore) || '—' }),
        el('td', { text: time(key.expiresAt) || 'never' }),
        el('td', { text: time(key.revokedAt) || '—' }),
        actions));
    }
    if (!keys.length) rows.append(el('tr', {}, el('td', { colspan: 10, text: 'No scoped keys yet.' })));
    const beams = listing.beamsSecret || {};
    facts($('keys-beams'), [
      ['Source', beams.source === 'store' ? 'stored (rolled through this API)' : 'the server config'],
      ['Scopes', Array.isArray(beams.scopes) ? beams.scopes.join(', ') : null],
    ]);
  }

  function overlapText(expiresIn) {
    return { now: 'The old one stopped working now.', '1h': 'The old one keeps working for 1 hour.',
      '24h': 'The old one keeps working for 24 hours.', '7d': 'The old one keeps working for 7 days.' }[expiresIn] || '';
  }

  async function createKey(event) {
    event.preventDefault();
    keysError('');
    const label = $('keys-label').value.trim();
    const scopes = [...document.querySelectorAll('input[name="keys-scope"]:checked')].map((input) => input.value);
    if (!label) { keysError('Give the key a label.'); return; }
    if (!scopes.length) { keysError('Choose at least one scope.'); return; }
    const body = { label, scopes };
    if ($('keys-expiry').value) body.expiresIn = $('keys-expiry').value;
    const result = await api('POST', keysBase(), body);
    if (!result.ok || !result.json) { keysError(describe(result)); return; }
    $('keys-label').value = '';
    for (const input of document.querySelectorAll('input[name="keys-scope"]')) input.checked = false;
    showNewKey(String(result.json.key), `Key ${result.json.id} created.`);
    await loadKeys();
  }

  async function rollKey(key) {
    keysError('');
    const expiresIn = $('keys-overlap').value;
    const result = await api('POST', `${keysBase()}/${encodeURIComponent(key.id)}/roll`, { expiresIn });
    if (!result.ok || !result.json) { keysError(describe(result)); return; }
    showNewKey(String(result.json.key), `Replaces ${key.id}. ${overlapText(expiresIn)}`);
    await loadKeys();
  }

  async function revokeKey(key) {
    keysError('');
    if (!confirm(`Revoke key ${key.id} (${key.label || 'no label'})? Requests with it fail at once.`)) return;
    const result = await api('DELETE', `${keysBase()}/${encodeURIComponent(key.id)}`);
    if (!result.ok) { keysError(describe(result)); return; }
    await loadKeys();
  }

  async function rollBeamsSecret() {
    keysError('');
    const expiresIn = $('keys-overlap').value;
    const warning = expiresIn === '24h' || expiresIn === '7d' ? ''
      : ' User tokens signed with the old secret stop binding when the overlap ends (SDK-made tokens live 24 hours).';
    if (!confirm(`Roll the Beams secret? Every backend must switch to the new one.${warning}`)) return;
    const result = await api('POST', `${base()}/beams-secret/roll`, { expiresIn });
    if (!result.ok || !result.json) { keysError(describe(result)); return; }
    showNewKey(String(result.json.secretKey), `New Beams secret. ${overlapText(expiresIn)}`);
    await loadKeys();
  }

  // MARK: Audit log

  // Pages of `GET …/audit`, oldest first: `cursors` holds the `since` of each page seen, so "Previous" goes back
  // without the server keeping anything. Every field is rendered as text: targets (user ids, …) come from outside.
  const audit = { cursors: ['0'], next: null };

  function auditError(text) { $('audit-error').textContent = text || ''; }

  function clearAudit() {
    audit.cursors = ['0'];
    audit.next = null;
    clear($('audit-rows'));
    $('audit-page').textContent = '';
  }

  async function loadAudit() {
    const admin = canAdminister();
    $('audit-form').hidden = !admin;
    $('audit-list').hidden = !admin;
    $('audit-scope').textContent = admin ? ''
      : `Signed in with a key whose scopes are ${session.scopes.join(', ') || 'none'}: reading the audit log needs `
        + `${ADMIN_SCOPE}.`;
    const rows = $('audit-rows');
    delete rows.dataset.done;
    if (!admin) { clear(rows); rows.dataset.done = '1'; return; }
    const since = audit.cursors[audit.cursors.length - 1];
    const query = new URLSearchParams({ since, limit: $('audit-limit').value });
    const action = $('audit-action').value.trim();
    if (action) query.set('action', action);
    const result = await api('GET', `${base()}/audit?${query}`);
    if (!result.ok || !result.json) { auditError(describe(result)); rows.dataset.done = '1'; return; }
    auditError('');
    renderAudit(result.json);
    rows.dataset.done = '1';
  }

  function renderAudit(listing) {
    const rows = $('audit-rows');
    clear(rows);
    const entries = Array.isArray(listing.entries) ? listing.entries : [];
    for (const entry of entries) {
      const outcome = String(entry.outcome || '');
      rows.append(el('tr', { 'data-seq': String(entry.seq), className: outcome === 'denied' ? 'denied' : null },
        el('td', { text: localTime(entry.time), title: String(entry.time) }),
        el('td', {}, code(String(entry.actor))),
        el('td', { text: String(entry.source) }),
        el('td', {}, code(String(entry.action))),
        el('td', { text: String(entry.target) }),
        el('td', { text: outcome }),
        el('td', {}, code(String(entry.requestId))),
        el('td', { className: 'num', text: String(entry.seq) })));
    }
    if (!entries.length) rows.append(el('tr', {}, el('td', { colspan: 8, text: 'No entries.' })));
    audit.next = typeof listing.next === 'string' ? listing.next : null;
    $('audit-next').disabled = audit.next === null;
    $('audit-prev').disabled = audit.cursors.length < 2;
    $('audit-first').disabled = audit.cursors.length < 2;
    $('audit-page').textContent = `Page ${audit.cursors.length}: ${entries.length} `
      + `${entries.length === 1 ? 'entry' : 'entries'}`
      + (audit.next === null ? ', the last.' : '.');
  }

  function auditPage(move) {
    if (move === 'next' && audit.next !== null) audit.cursors.push(audit.next);
    else if (move === 'prev' && audit.cursors.length > 1) audit.cursors.pop();
    else if (move === 'first') audit.cursors = ['0'];
    loadAudit();
  }

  // MARK: Start-up

  /** Fills every platform menu (test push, device look-up) from the one list, so they cannot drift apart. */
  function fillPlatformMenus() {
    for (const select of document.querySelectorAll('select[data-platforms]')) {
      select.replaceChildren(...PLATFORMS.map(([key, label]) => el('option', { value: key, text: label })));
    }
  }

  function start() {
    fillPlatformMenus();
    $('signin').addEventListener('submit', (event) => {
      event.preventDefault();
      const button = $('signin-btn');
      button.disabled = true;
      signIn($('instance').value, $('secret').value, false).finally(() => { button.disabled = false; });
    });
    $('signout').addEventListener('click', () => signOut('Signed out.'));
    window.addEventListener('hashchange', () => { if (session.secret) showView(currentView(), 'heading'); });

    apnsTokenInfo = Array.from($('tp-token-info').childNodes).map((node) => node.cloneNode(true));
    $('tp-form').addEventListener('submit', sendTestPush);
    $('tp-token').addEventListener('input', () => {
      $('tp-device-info').textContent = '';
      updateTokenInfo();
    });
    for (const id of ['tp-platform', 'tp-by']) {
      $(id).addEventListener('change', () => {
        $('tp-device-info').textContent = '';
        updateTestPlatform();
      });
    }
    for (const id of ['tp-mode-alert', 'tp-mode-json', 'tp-type', 'tp-priority', 'tp-json', 'tp-title', 'tp-body', 'tp-sound', 'tp-badge']) {
      $(id).addEventListener('input', updatePayloadInfo);
      $(id).addEventListener('change', updatePayloadInfo);
    }
    $('tp-tpl-alert').addEventListener('click', () => template('alert'));
    $('tp-tpl-background').addEventListener('click', () => template('background'));
    $('tp-tpl-data').addEventListener('click', () => template('data'));

    $('dev-form').addEventListener('submit', lookUp);
    // The platform matters only for a token (ids and user ids are unique across platforms).
    const syncLookUp = () => {
      const by = $('dev-by').value;
      $('dev-platform-field').hidden = by !== 'token';
      $('dev-value').placeholder = by === 'token' ? TOKEN_HINTS[$('dev-platform').value] || '' : '';
    };
    $('dev-by').addEventListener('change', syncLookUp);
    $('dev-platform').addEventListener('change', syncLookUp);
    syncLookUp();
    $('int-form').addEventListener('submit', countSubscribers);
    $('ch-form').addEventListener('submit', listChannels);

    $('pub-form').addEventListener('submit', publish);
    for (const id of ['pub-kind-interests', 'pub-kind-users', 'pub-targets', 'pub-title', 'pub-body', 'pub-json',
      'pub-to-apns', 'pub-to-fcm', 'pub-to-web', 'pub-to-unifiedpush', 'pub-to-hms']) {
      $(id).addEventListener('input', updatePublishPreview);
    }
    for (const id of ['pub-kind-interests', 'pub-kind-users', 'pub-mode-form', 'pub-mode-json']) {
      $(id).addEventListener('change', switchPublishMode);
    }
    $('rec-refresh').addEventListener('click', loadRecent);
    $('ov-refresh').addEventListener('click', loadOverview);
    $('keys-create-form').addEventListener('submit', createKey);
    $('keys-copy').addEventListener('click', copyNewKey);
    $('keys-new-done').addEventListener('click', hideNewKey);
    $('keys-beams-roll').addEventListener('click', rollBeamsSecret);
    $('audit-form').addEventListener('submit', (event) => {
      event.preventDefault();
      audit.cursors = ['0'];
      loadAudit();
    });
    $('audit-next').addEventListener('click', () => auditPage('next'));
    $('audit-prev').addEventListener('click', () => auditPage('prev'));
    $('audit-first').addEventListener('click', () => auditPage('first'));

    let tokens = [];
    try { tokens = JSON.parse(sessionStorage.getItem(RECENT_TOKENS_KEY) || '[]'); } catch (_) { tokens = []; }
    if (Array.isArray(tokens)) renderRecentTokens(tokens);
    updatePayloadInfo();

    let saved = null;
    try { saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || 'null'); } catch (_) { saved = null; }
    if (saved && typeof saved.instance === 'string' && typeof saved.secret === 'string') {
      $('instance').value = saved.instance;
      signIn(saved.instance, saved.secret, true);
    } else {
      $('instance').focus();
    }
  }

  start();
})();
