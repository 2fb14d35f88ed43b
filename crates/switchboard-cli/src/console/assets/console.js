// switchboard console. Everything a server says is put in the page as
// text (textContent, attributes), never parsed as markup.
'use strict';

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const text = await response.text();
  let value;
  try { value = JSON.parse(text); } catch { value = { error: text }; }
  if (!response.ok) throw new Error(value.error || `HTTP ${response.status}`);
  return value;
}

// `node`'s children made `children`, leaving out the ones that are not
// there (null, undefined).
function put(node, ...children) {
  node.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
}

function problem(text) {
  const node = $('problem');
  node.textContent = text || '';
  node.hidden = !text;
}

// ---- tabs

// Each tab `show-NAME` shows section `NAME`; `onShow[NAME]` runs when it
// is shown (other scripts add theirs).
const onShow = {};

function show(which) {
  for (const tab of document.querySelectorAll('nav .tab')) {
    const name = tab.id.slice('show-'.length);
    $(name).hidden = name !== which;
    tab.classList.toggle('current', name === which);
  }
  onShow[which]?.();
}

// ---- servers

// Servers still starting: the page asks again until each has settled,
// then lists the tools again.
const STARTING = new Set(['pending', 'connecting', 'reconnecting']);
let waiting = null;

// Whether the console is a gateway's — the background session's, or a
// `switchboard serve --console` — (its servers are the gateway's; roots
// come from its hosts).
let inSession = false;

async function loadServers() {
  const { servers, gateway } = await api('/api/servers');
  inSession = Boolean(gateway);
  $('session-note').hidden = !inSession;
  $('session-name').textContent = gateway || '';
  const starting = servers.some((server) => STARTING.has(server.state));
  clearTimeout(waiting);
  if (starting) {
    waiting = setTimeout(() => loadServers().catch((error) => problem(error.message)), 500);
  } else if (waiting !== null) {
    waiting = null;
    loadTools().catch((error) => problem(error.message));
  }
  // A row whose server has not changed is kept as it is: a button is not
  // swapped for another under the user's pointer.
  const body = $('server-table').tBodies[0];
  const kept = new Map([...body.rows].map((row) => [row.dataset.server, row]));
  body.replaceChildren(...servers.map((server) => {
    const sig = JSON.stringify(server);
    const row = kept.get(server.name);
    if (row && row.dataset.sig === sig) return row;
    const made = serverRow(server);
    made.dataset.sig = sig;
    return made;
  }));
}

function serverRow(server) {
  return (el('tr', { 'data-server': server.name },
    el('td', {}, server.name),
    el('td', {},
      el('span', { class: `state ${server.state}` }, server.state),
      server.reason ? el('span', { class: 'detail-text' }, server.reason) : null,
      server.stderr ? el('span', { class: 'detail-text stderr' }, `stderr: ${server.stderr}`) : null,
      server.pending ? el('pre', { class: 'pending' }, server.pending.join('\n')) : null,
      server.pending ? el('button', {
        type: 'button', class: 'primary', 'data-approve': server.name,
        onclick: (event) => approve(server.name, event.target),
      }, 'Approve and start') : null,
      server.login ? el('span', { class: 'detail-text login' }, server.login) : null,
      serverActions(server),
      server.remote && server.state === 'needs-auth' ? el('button', {
        type: 'button', class: 'primary', 'data-login': server.name,
        onclick: () => login(server.name),
      }, 'Log in') : null,
      server.remote && server.state === 'ready' ? el('button', {
        type: 'button', 'data-logout': server.name,
        onclick: async (event) => {
          event.target.disabled = true;
          try {
            await api('/api/logout', { name: server.name });
            problem('');
          } catch (error) {
            problem(`Logging out of ${server.name}: ${error.message}`);
          }
          await Promise.all([loadServers(), loadTools()]).catch((error) => problem(error.message));
        },
      }, 'Log out') : null),
    el('td', {}, server.transport || ''),
    el('td', {}, [server.era, server.protocolVersion].filter(Boolean).join(' ')),
    el('td', {}, server.state === 'ready' ? String(server.tools) : ''),
    el('td', {}, server.source || '')));
}

// Restart, stop (for this console only) or start a server.
function serverActions(server) {
  if (server.pending || server.skipped) return null;
  const act = (action) => async (event) => {
    event.target.disabled = true;
    try {
      await api('/api/server', { name: server.name, action });
      problem('');
    } catch (error) {
      problem(`${action} ${server.name}: ${error.message}`);
    }
    await Promise.all([loadServers(), loadTools()]).catch((error) => problem(error.message));
  };
  const button = (action, label) => el('button', { type: 'button', 'data-action': action, 'data-server-action': server.name, onclick: act(action) }, label);
  return el('span', { class: 'server-actions' },
    server.state === 'disabled' ? button('start', 'Start') : button('restart', 'Restart'),
    server.state === 'disabled' ? null : button('stop', 'Stop'),
    server.state === 'ready' ? null : el('button', {
      type: 'button', 'data-diagnose': server.name, onclick: () => diagnose(server.name),
    }, 'Diagnose'),
    inSession ? null : el('button', { type: 'button', 'data-roots': server.name, onclick: () => editRoots(server.name) }, 'Roots'),
    configActions(server));
}

// The roots this server is offered (`roots/list`): none until set here.
async function editRoots(name) {
  const { roots } = await api('/api/roots');
  const text = el('textarea', { id: 'roots-text', 'aria-label': 'roots, one file:// URI a line' });
  text.value = (roots[name] || []).map((root) => root.uri).join('\n');
  const modal = el('div', { class: 'modal', 'data-roots-of': name, role: 'dialog', 'aria-modal': 'true' });
  const said = el('p', { class: 'warning' });
  const save = async () => {
    const uris = text.value.split('\n').map((line) => line.trim()).filter(Boolean);
    try {
      await api('/api/roots', { server: name, roots: uris });
      modal.remove();
      problem('');
    } catch (error) {
      said.textContent = error.message;
    }
  };
  modal.append(el('div', { class: 'box' },
    el('h3', {}, `Roots of ${name}`),
    el('p', {}, 'The directories this server may know about, one file:// URI a line (none: it is told of none).'),
    text, said,
    el('div', { class: 'actions' },
      el('button', { type: 'button', class: 'primary', 'data-save-roots': name, onclick: save }, 'Save'),
      el('button', { type: 'button', onclick: () => modal.remove() }, 'Cancel'))));
  document.body.append(modal);
}

// The connection doctor: each step, where it failed, what to do.
async function diagnose(name) {
  const modal = el('div', { class: 'modal', 'data-doctor': name, role: 'dialog', 'aria-modal': 'true' });
  const list = el('ol', { class: 'doctor' }, el('li', {}, 'checking…'));
  modal.append(el('div', { class: 'box' }, el('h3', {}, `Why ${name} is not ready`), list,
    el('div', { class: 'actions' }, el('button', { type: 'button', onclick: () => modal.remove() }, 'Close'))));
  document.body.append(modal);
  try {
    const { steps } = await api('/api/doctor', { name });
    list.replaceChildren(...steps.map((step) => el('li', {
      class: step.ok === true ? 'passed' : (step.ok === false ? 'failed' : 'said'),
      'data-step': step.step,
    },
    el('strong', {}, `${step.ok === true ? '✓' : (step.ok === false ? '✗' : '•')} ${step.step}: `),
    step.detail,
    step.advice ? el('div', { class: 'advice' }, `→ ${step.advice}`) : null)));
  } catch (error) {
    list.replaceChildren(el('li', { class: 'failed' }, error.message));
  }
}

// A login: the consent page's host shown as the browser will open it,
// opened only when the user says so; the page then follows the server.
async function login(name) {
  let begun;
  try {
    begun = await api('/api/login', { name });
  } catch (error) {
    problem(`Logging in to ${name} failed: ${error.message}`);
    return;
  }
  problem('');
  const modal = el('div', { class: 'modal', 'data-login-page': name, role: 'dialog', 'aria-modal': 'true' });
  modal.append(el('div', { class: 'box' },
    el('h3', {}, `Log in to ${name}`),
    el('p', {}, 'Opens the authorization page on ', el('strong', { class: 'host' }, begun.host)),
    el('pre', { class: 'url' }, begun.url),
    ...(begun.warnings || []).map((warning) => el('p', { class: 'warning' }, `⚠ ${warning}`)),
    el('div', { class: 'actions' },
      el('button', {
        type: 'button', class: 'primary', 'data-open-login': name,
        onclick: () => { window.open(begun.url, '_blank', 'noopener,noreferrer'); modal.remove(); watchServers(); },
      }, `Open ${begun.host}`),
      el('button', { type: 'button', onclick: () => modal.remove() }, 'Not now'))));
  document.body.append(modal);
}

// Asks for the servers' states until none waits for a login or starts,
// and (for a minute at most) until `until(servers)` holds: a change made
// in the files shows once the servers are in line with them.
function watchServers(until = () => true, deadline = Date.now() + 60000) {
  clearTimeout(waiting);
  waiting = setTimeout(async () => {
    const { servers } = await api('/api/servers').catch(() => ({ servers: [] }));
    await loadServers().catch((error) => problem(error.message));
    const busy = servers.some((server) => server.login === 'waiting for the browser' || STARTING.has(server.state));
    if (busy || (!until(servers) && Date.now() < deadline)) watchServers(until, deadline);
    else loadTools().catch((error) => problem(error.message));
  }, 300);
}

async function approve(name, button) {
  button.disabled = true;
  button.textContent = 'starting…';
  try {
    await api('/api/approve', { name });
    problem('');
  } catch (error) {
    problem(`Approving ${name} failed: ${error.message}`);
  }
  await Promise.all([loadServers(), loadTools()]).catch((error) => problem(error.message));
}

// ---- tools

let tools = [];

async function loadTools() {
  ({ tools } = await api('/api/tools'));
  renderToolList();
  performance.mark('tools-listed');
}

function renderToolList() {
  const query = $('tool-search').value.trim().toLowerCase();
  const shown = tools.filter((tool) => !query
    || [tool.name, tool.server, tool.title, tool.description]
      .some((text) => (text || '').toLowerCase().includes(query)));
  $('tool-list').replaceChildren(...shown.map((tool) => el('li', {
    'data-tool': tool.name,
    onclick: () => pickTool(tool),
  }, el('span', {}, tool.tool), ' ', el('span', { class: 'server' }, tool.server),
  ...toolBadges(tool))));
}

// What marks a tool in the list: it has an app; only apps (or only the
// model) may call it.
function toolBadges(tool) {
  const badges = [];
  if (appUri(tool)) badges.push(el('span', { class: 'badge' }, 'app'));
  const visibility = appVisibility(tool);
  if (!visibility.includes('model')) badges.push(el('span', { class: 'badge' }, 'app-only'));
  if (!visibility.includes('app')) badges.push(el('span', { class: 'badge' }, 'model-only'));
  return badges.flatMap((badge) => [' ', badge]);
}

// A POSIX shell word: single-quoted, a quote inside written '\''.
function shellWord(text) {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

// The `switchboard call` command line that makes this call from a
// terminal.
function callCommand(tool, args) {
  return `switchboard call ${shellWord(`${tool.server}/${tool.tool}`)} ${shellWord(JSON.stringify(args))}`;
}

// The calls made from this page, newest first; each can be run again.
const history = [];

function renderHistory() {
  $('history').replaceChildren(...history.map((entry, i) => el('li', { 'data-history': i },
    el('span', { class: entry.ok ? 'state ready' : 'state failed' }, entry.ok ? 'ok' : (entry.cancelled ? 'cancelled' : 'error')), ' ',
    el('span', {}, `${entry.tool.server}/${entry.tool.tool}`), ' ',
    el('code', {}, JSON.stringify(entry.args)), ' ',
    el('button', { type: 'button', 'data-rerun': i, onclick: () => { show('tools'); pickTool(entry.tool, entry.args, true); } }, 'run again'))));
}

function pickTool(tool, given, run) {
  if (currentApp) { const closing = currentApp; currentApp = null; closing.close(); }
  for (const item of $('tool-list').children) {
    item.classList.toggle('current', item.dataset.tool === tool.name);
  }
  const schema = tool.inputSchema || { type: 'object' };
  let form = field(schema, { required: true, root: schema, given });
  const raw = el('textarea', { id: 'raw-json', hidden: true, 'aria-label': 'arguments as JSON' });
  const rawToggle = el('input', { type: 'checkbox', id: 'raw-toggle' });
  rawToggle.addEventListener('change', () => {
    if (rawToggle.checked) {
      raw.value = JSON.stringify(form.read() ?? {}, null, 2);
    } else {
      try {
        const value = JSON.parse(raw.value || '{}');
        const rebuilt = field(schema, { required: true, given: value, root: schema });
        form.node.replaceWith(rebuilt.node);
        form = rebuilt;
      } catch (error) {
        rawToggle.checked = true;
        problem(`The arguments are not JSON: ${error.message}`);
        return;
      }
    }
    raw.hidden = !rawToggle.checked;
    form.node.hidden = rawToggle.checked;
    problem('');
  });
  const result = el('div', { id: 'result', class: 'result' });
  const command = el('code', { id: 'command', title: 'the same call from a terminal' });
  const bar = el('progress', { id: 'progress', hidden: true });
  const said = el('span', { id: 'progress-text', class: 'field-help' });
  const cancel = el('button', { type: 'button', id: 'cancel', hidden: true }, 'Cancel');
  let running = null;
  cancel.addEventListener('click', () => running?.abort());
  // A tool with an app: its view beside the result.
  const appHolder = appUri(tool) ? el('div', { id: 'app' }) : null;
  const call = async () => {
    let args;
    try {
      args = rawToggle.checked ? JSON.parse(raw.value || '{}') : (form.read() ?? {});
    } catch (error) {
      problem(`The arguments are not JSON: ${error.message}`);
      return;
    }
    problem('');
    command.textContent = callCommand(tool, args);
    result.className = 'result';
    result.replaceChildren(el('p', { class: 'hint' }, 'calling…'));
    const entry = { tool, args, ok: false };
    bar.hidden = false;
    bar.removeAttribute('value');
    said.textContent = '';
    cancel.hidden = false;
    running = new AbortController();
    watchAsks(true);
    const started = performance.now();
    let app = null;
    try {
      if (appHolder) {
        app = await openApp(tool, appHolder);
        app?.toolInput(args);
      }
      // One JSON line per event: progress as it comes, then the result
      // or the error. Cancel closes the connection: the server is told.
      const response = await fetch('/api/call', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: tool.name, arguments: args }),
        signal: running.signal,
      });
      if (!response.ok) {
        const text = await response.text();
        let error;
        try { error = JSON.parse(text).error; } catch { error = text; }
        throw new Error(error || `HTTP ${response.status}`);
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffered = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffered.indexOf('\n')) >= 0) {
          const event = JSON.parse(buffered.slice(0, end));
          buffered = buffered.slice(end + 1);
          if (event.progress) {
            const { progress, total, message } = event.progress;
            if (total) { bar.max = total; bar.value = progress; }
            said.textContent = `${progress}${total ? `/${total}` : ''}${message ? ` ${message}` : ''}`;
          } else if (event.result) {
            renderResult(result, event.result, performance.now() - started, tool);
            app?.toolResult(event.result);
            entry.ok = !event.result.isError;
          } else if (event.error !== undefined) {
            throw new Error(event.error);
          }
        }
      }
    } catch (error) {
      const cancelled = error.name === 'AbortError';
      result.className = 'result error';
      result.replaceChildren(el('pre', {}, cancelled ? 'cancelled' : error.message));
      // The view is told: cancelled, or the call's error as its result.
      if (cancelled) app?.toolCancelled('cancelled by the user');
      else app?.toolResult({ content: [{ type: 'text', text: error.message }], isError: true });
      entry.cancelled = cancelled;
    } finally {
      watchAsks(false);
      for (const node of document.querySelectorAll('.modal[data-ask]')) node.remove();
      bar.hidden = true;
      cancel.hidden = true;
      running = null;
      history.unshift(entry);
      history.splice(50);
      renderHistory();
    }
  };
  put($('tool-detail'),
    el('h2', {}, tool.title || tool.tool),
    el('p', { class: 'field-help' }, `${tool.server} · ${tool.name}`),
    tool.description ? el('p', {}, tool.description) : null,
    el('form', { id: 'tool-form', onsubmit: (event) => { event.preventDefault(); call(); } },
      form.node,
      raw,
      el('label', { for: 'raw-toggle', class: 'inline' }, rawToggle, ' raw JSON'),
      el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary', id: 'call' }, 'Call'), cancel, bar, said)),
    el('p', { class: 'field-help' }, 'As a command: ', command),
    result,
    ...(appHolder ? [appControls(), appHolder] : []));
  if (run) call();
}

// The schema `ref` points at inside `root` (`#/$defs/x`), if any.
function resolveRef(root, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  let node = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = node[key];
  }
  return node;
}

// A form field for `schema` at `path` (`data-path`: `target.zone`,
// `options.labels.0`): { node, read() } (read gives undefined for an
// optional field left empty). `root` resolves local `$ref`s.
function field(schema, { name = null, required = false, given, root, path = '', depth = 0 } = {}) {
  schema = schema || {};
  if (schema.$ref && depth < 32) {
    const target = resolveRef(root, schema.$ref);
    if (target) {
      const { $ref, ...rest } = schema;
      schema = { ...target, ...rest };
    }
  }
  const value = given !== undefined ? given : schema.default;
  const title = schema.title || name;
  const label = (id) => (title ? el('label', { for: id, class: required ? 'required' : '' }, title) : null);
  const help = schema.description ? el('div', { class: 'field-help' }, schema.description) : null;
  const id = `f${Math.random().toString(36).slice(2)}`;
  const inner = (sub, options) => field(sub, { root, depth: depth + 1, ...options });
  const choices = schema.oneOf || schema.anyOf;
  if (Array.isArray(choices) && choices.length > 0) {
    const select = el('select', { id, 'data-path': `${path}#choice` },
      ...choices.map((choice, i) => el('option', { value: i }, choice.title || choice.const || `option ${i + 1}`)));
    const holder = el('div');
    let current;
    const pick = () => {
      const branch = { ...choices[Number(select.value)] };
      if (!branch.type && schema.type) branch.type = schema.type;
      current = inner(branch, { required, path });
      holder.replaceChildren(current.node);
    };
    select.addEventListener('change', pick);
    pick();
    return { node: el('div', {}, label(id), help, select, holder), read: () => current.read() };
  }
  if (Array.isArray(schema.enum)) {
    const select = el('select', { id, 'data-path': path },
      required ? null : el('option', { value: '' }, '—'),
      ...schema.enum.map((option, i) => el('option', { value: String(i), selected: option === value }, typeof option === 'string' ? option : JSON.stringify(option))));
    return {
      node: el('div', {}, label(id), help, select),
      read: () => (select.value === '' ? undefined : schema.enum[Number(select.value)]),
    };
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : (schema.type || (schema.properties ? 'object' : undefined));
  if (type === 'object') {
    const props = schema.properties || {};
    const needed = new Set(schema.required || []);
    const children = Object.entries(props).map(([key, sub]) => [key, inner(sub, {
      name: key,
      required: needed.has(key),
      given: value && typeof value === 'object' ? value[key] : undefined,
      path: path ? `${path}.${key}` : key,
    })]);
    const body = children.map(([, child]) => child.node);
    const node = name === null
      ? el('div', { class: 'object', 'data-path': path }, ...body)
      : el('fieldset', { 'data-path': path }, el('legend', { class: required ? 'required' : '' }, title), help, ...body);
    return {
      node,
      read: () => {
        const out = {};
        for (const [key, child] of children) {
          const v = child.read();
          if (v !== undefined) out[key] = v;
        }
        return Object.keys(out).length === 0 && !required && name !== null ? undefined : out;
      },
    };
  }
  if (type === 'array') {
    const items = [];
    const list = el('div', { class: 'items' });
    let made = 0;
    const add = (v) => {
      const item = inner(schema.items || {}, { required: true, given: v, path: `${path}.${made}` });
      made += 1;
      const entry = { item };
      const row = el('div', { class: 'item' }, item.node,
        el('button', { type: 'button', onclick: () => { items.splice(items.indexOf(entry), 1); row.remove(); } }, 'remove'));
      items.push(entry);
      list.append(row);
    };
    for (const v of Array.isArray(value) ? value : []) add(v);
    const node = el('fieldset', { 'data-path': path },
      el('legend', { class: required ? 'required' : '' }, title || 'items'), help, list,
      el('button', { type: 'button', class: 'add', 'data-add': path, onclick: () => add(undefined) }, 'add'));
    return {
      node,
      read: () => (items.length === 0 && !required ? undefined : items.map(({ item }) => item.read())),
    };
  }
  if (type === 'boolean') {
    const box = el('input', { type: 'checkbox', id, checked: value === true, 'data-path': path });
    return { node: el('div', {}, label(id), help, box), read: () => box.checked };
  }
  if (type === 'number' || type === 'integer') {
    const input = el('input', {
      type: 'number', id, 'data-path': path, step: type === 'integer' ? '1' : 'any',
      min: schema.minimum, max: schema.maximum, value: value ?? '',
    });
    return {
      node: el('div', {}, label(id), help, input),
      read: () => (input.value === '' ? undefined : Number(input.value)),
    };
  }
  if (type === 'string') {
    const kinds = { date: 'date', 'date-time': 'datetime-local', email: 'email', uri: 'url', time: 'time' };
    const input = el('input', {
      type: kinds[schema.format] || 'text', id, 'data-path': path, value: value ?? '',
      placeholder: schema.format || '',
    });
    return {
      node: el('div', {}, label(id), help, input),
      read: () => (input.value === '' && !required ? undefined : input.value),
    };
  }
  // Anything else: its JSON.
  const area = el('textarea', { id, 'data-path': path });
  area.value = value === undefined ? '' : JSON.stringify(value, null, 2);
  return {
    node: el('div', {}, label(id), help, area),
    read: () => (area.value.trim() === '' ? undefined : JSON.parse(area.value)),
  };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function renderResult(holder, result, ms, tool) {
  holder.className = result.isError ? 'result error' : 'result';
  const blocks = (result.content || []).map((block) => {
    switch (block.type) {
      case 'text':
        return el('pre', { class: 'content text' }, block.text);
      case 'image':
        return /^image\/[a-z0-9.+-]+$/i.test(block.mimeType || '') && BASE64.test(block.data || '')
          ? el('img', { class: 'content', alt: 'image', src: `data:${block.mimeType};base64,${block.data}` })
          : el('pre', {}, '[an image that is not one]');
      case 'audio':
        return /^audio\/[a-z0-9.+-]+$/i.test(block.mimeType || '') && BASE64.test(block.data || '')
          ? el('audio', { class: 'content', controls: true, src: `data:${block.mimeType};base64,${block.data}` })
          : el('pre', {}, '[audio that is not audio]');
      case 'resource_link':
        return el('pre', { class: 'content link' }, `link: ${block.name || ''} ${block.uri || ''}`);
      case 'resource':
        return el('pre', { class: 'content resource' }, `${block.resource?.uri || ''}\n${block.resource?.text ?? `[${block.resource?.mimeType || 'binary'}]`}`);
      default:
        return el('pre', { class: 'content' }, JSON.stringify(block, null, 2));
    }
  });
  if (result.structuredContent !== undefined) {
    blocks.push(el('pre', { class: 'content structured' }, JSON.stringify(result.structuredContent, null, 2)));
    // The client checks it against the tool's outputSchema: a result
    // that does not match comes as an error saying where.
    if (tool?.outputSchema && !result.isError) {
      blocks.push(el('p', { class: 'field-help', id: 'schema-checked' }, '✓ structuredContent matches the tool\'s outputSchema'));
    }
  }
  holder.replaceChildren(...blocks,
    el('p', { class: 'field-help' }, `${result.isError ? 'error' : 'ok'}, ${Math.round(ms)} ms`));
}

// ---- what servers ask (while a call runs)

const shownAsks = new Set();
let asking = null;

// Asked often while a call of the page runs; once a second otherwise (a
// call an app's view makes can bring a question too).
function watchAsks(on) {
  clearInterval(asking);
  asking = setInterval(() => checkAsks().catch((error) => problem(error.message)), on ? 300 : 1000);
  if (on) checkAsks().catch((error) => problem(error.message));
}

async function checkAsks() {
  const { asks } = await api('/api/asks');
  for (const ask of asks) {
    if (!shownAsks.has(ask.id)) {
      shownAsks.add(ask.id);
      showAsk(ask);
    }
  }
  // A question whose call ended (cancelled, timed out) goes.
  for (const node of document.querySelectorAll('.modal[data-ask]')) {
    if (!asks.some((ask) => String(ask.id) === node.dataset.ask)) node.remove();
  }
}

function showAsk(ask) {
  const modal = el('div', { class: 'modal', 'data-ask': ask.id, role: 'dialog', 'aria-modal': 'true' });
  const answer = async (action, content, text) => {
    modal.remove();
    await api('/api/answer', { id: ask.id, action, content, text }).catch((error) => problem(error.message));
  };
  const buttons = (...extra) => el('div', { class: 'actions' }, ...extra,
    el('button', { type: 'button', 'data-answer': 'decline', onclick: () => answer('decline') }, 'Decline'),
    el('button', { type: 'button', 'data-answer': 'cancel', onclick: () => answer('cancel') }, 'Cancel'));
  let body;
  if (ask.mode === 'policy') {
    // The tool policy's `ask` rule: run once, always, or not.
    body = el('div', {},
      el('p', {}, `The tool policy asks first (${ask.rule}).`),
      el('p', {}, 'Run ', el('code', {}, ask.tool), ' of server ', el('strong', {}, ask.server), ' with:'),
      el('pre', {}, JSON.stringify(ask.arguments ?? {}, null, 2)),
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', 'data-answer': 'once', onclick: () => answer('accept', undefined, 'once') }, 'Run once'),
        el('button', { type: 'button', 'data-answer': 'always', onclick: () => answer('accept', undefined, 'always') }, 'Always (this server as configured now)'),
        el('button', { type: 'button', 'data-answer': 'decline', onclick: () => answer('decline') }, 'No')));
  } else if (ask.mode === 'sampling') {
    // The server asks for a model's message: shown, and answered by the
    // user (nothing goes to a model).
    const text = el('textarea', { id: 'sampling-answer', 'aria-label': 'the answer to send as the model' });
    body = el('form', {
      class: 'ask-form',
      onsubmit: (event) => { event.preventDefault(); answer('accept', undefined, text.value); },
    },
    el('p', {}, 'wants a model to answer:'),
    ask.systemPrompt ? el('p', { class: 'field-help' }, `system: ${ask.systemPrompt}`) : null,
    ...(ask.messages || []).map((message) => el('div', { class: 'message' },
      el('strong', {}, `${message.role}: `),
      message.content?.type === 'text'
        ? el('pre', { class: 'content text' }, message.content.text)
        : el('pre', {}, JSON.stringify(message.content, null, 2)))),
    el('label', { for: 'sampling-answer' }, `Your answer (at most ${ask.maxTokens} tokens)`),
    text,
    el('div', { class: 'actions' },
      el('button', { type: 'submit', class: 'primary', 'data-answer': 'accept' }, 'Send'),
      el('button', { type: 'button', 'data-answer': 'decline', onclick: () => answer('decline') }, 'Refuse')));
  } else if (ask.mode === 'url') {
    body = el('div', {},
      el('p', {}, ask.message),
      el('p', {}, 'Opens a page on ', el('strong', { class: 'host' }, ask.host)),
      el('pre', { class: 'url' }, ask.url),
      ...(ask.warnings || []).map((warning) => el('p', { class: 'warning' }, `⚠ ${warning}`)),
      buttons(el('button', {
        type: 'button', class: 'primary', 'data-answer': 'accept',
        onclick: () => { window.open(ask.url, '_blank', 'noopener,noreferrer'); answer('accept'); },
      }, `Open ${ask.host}`)));
  } else {
    const form = field(ask.schema, { required: true, root: ask.schema });
    body = el('form', {
      class: 'ask-form',
      onsubmit: (event) => {
        event.preventDefault();
        let content;
        try { content = form.read() ?? {}; } catch (error) { problem(error.message); return; }
        answer('accept', content);
      },
    }, el('p', {}, ask.message), form.node,
    buttons(el('button', { type: 'submit', class: 'primary', 'data-answer': 'accept' }, 'Send')));
  }
  modal.append(el('div', { class: 'box' }, el('h3', {}, ask.mode === 'policy' ? 'Allow this call?' : `${ask.server} asks`), body));
  document.body.append(modal);
}

// ---- resources and prompts

function mark(list, attr, key) {
  for (const item of list.children) item.classList.toggle('current', item.dataset[attr] === key);
}

function renderContents(holder, contents) {
  holder.replaceChildren(...(contents || []).map((item) => {
    const head = el('div', { class: 'field-help' }, `${item.uri || ''} ${item.mimeType || ''}`);
    if (typeof item.text === 'string') return el('div', {}, head, el('pre', { class: 'content text' }, item.text));
    if (/^image\/[a-z0-9.+-]+$/i.test(item.mimeType || '') && BASE64.test(item.blob || '')) {
      return el('div', {}, head, el('img', { class: 'content', alt: item.uri || 'image', src: `data:${item.mimeType};base64,${item.blob}` }));
    }
    return el('div', {}, head, el('pre', {}, `[binary, ${Math.floor(((item.blob || '').length * 3) / 4)} bytes]`));
  }));
}

async function readResource(server, uri, holder) {
  holder.replaceChildren(el('p', { class: 'hint' }, 'reading…'));
  try {
    const result = await api('/api/read', { server, uri });
    holder.className = 'result';
    renderContents(holder, result.contents);
  } catch (error) {
    holder.className = 'result error';
    holder.replaceChildren(el('pre', {}, error.message));
  }
}

// The variables of an RFC 6570 template (`{a}`, `{+b}`, `{?c,d}`).
function templateVariables(template) {
  const names = [];
  for (const [, body] of template.matchAll(/\{([^}]*)\}/g)) {
    for (const part of body.replace(/^[+#./;?&]/, '').split(',')) {
      const name = part.replace(/[*]$/, '').replace(/:\d+$/, '');
      if (name && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

// RFC 6570 levels 1–3, enough for resource templates.
function expandTemplate(template, values) {
  const enc = (v, reserved) => (reserved ? encodeURI(v) : encodeURIComponent(v));
  return template.replace(/\{([^}]*)\}/g, (_, body) => {
    const op = /^[+#./;?&]/.test(body) ? body[0] : '';
    const names = body.slice(op.length).split(',').map((n) => n.replace(/[*]$/, '').replace(/:\d+$/, ''));
    const defined = names.filter((n) => values[n] !== undefined && values[n] !== '');
    const reserved = op === '+' || op === '#';
    const parts = defined.map((n) => (op === '?' || op === '&' || op === ';' ? `${n}=${enc(values[n], false)}` : enc(values[n], reserved)));
    if (parts.length === 0) return '';
    const first = { '': '', '+': '', '#': '#', '.': '.', '/': '/', ';': ';', '?': '?', '&': '&' }[op];
    const sep = { '': ',', '+': ',', '#': ',', '.': '.', '/': '/', ';': ';', '?': '&', '&': '&' }[op];
    return first + parts.join(sep);
  });
}

async function loadResources() {
  const { resources, templates, failed } = await api('/api/resources');
  $('resource-list').replaceChildren(...resources.map((resource) => el('li', {
    'data-uri': resource.uri,
    onclick: () => {
      mark($('resource-list'), 'uri', resource.uri);
      const holder = el('div', { id: 'read-result', class: 'result' });
      put($('resource-detail'),
        el('h2', {}, resource.title || resource.name || resource.uri),
        el('p', { class: 'field-help' }, `${resource.server} · ${resource.uri}`),
        resource.description ? el('p', {}, resource.description) : null,
        el('div', { class: 'actions' }, subscribeButton(resource.server, resource.uri)),
        holder);
      readResource(resource.server, resource.uri, holder);
    },
  }, el('span', {}, resource.name || resource.uri), ' ', el('span', { class: 'server' }, resource.server))));
  $('template-list').replaceChildren(...templates.map((template) => el('li', {
    'data-template': template.uriTemplate,
    onclick: () => {
      mark($('template-list'), 'template', template.uriTemplate);
      const inputs = templateVariables(template.uriTemplate).map((name) => [name, el('input', { type: 'text', id: `t-${name}`, 'data-path': name })]);
      const lists = inputs.map(([name, input]) => completeInto(input, (value) => ({
        server: template.server, kind: 'template', name: template.uriTemplate, argument: name, value, context: givenBesides(inputs, input),
      })));
      const holder = el('div', { id: 'read-result', class: 'result' });
      const shown = el('p', { class: 'field-help', id: 'template-uri' }, template.uriTemplate);
      const uri = () => expandTemplate(template.uriTemplate, Object.fromEntries(inputs.map(([n, i]) => [n, i.value])));
      for (const [, input] of inputs) input.addEventListener('input', () => { shown.textContent = uri(); });
      put($('resource-detail'),
        el('h2', {}, template.title || template.name || template.uriTemplate),
        el('p', { class: 'field-help' }, `${template.server} · ${template.uriTemplate}`),
        template.description ? el('p', {}, template.description) : null,
        el('form', { id: 'template-form', onsubmit: (event) => { event.preventDefault(); readResource(template.server, uri(), holder); } },
          ...inputs.map(([name, input], i) => el('div', {}, el('label', { for: input.id }, name), input, lists[i])),
          shown,
          el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary', id: 'read' }, 'Read'))),
        holder);
    },
  }, el('span', {}, template.name || template.uriTemplate), ' ', el('span', { class: 'server' }, template.server))));
  for (const failure of failed) problem(`${failure.server}: ${failure.error}`);
}

async function loadPrompts() {
  const { prompts } = await api('/api/prompts');
  $('prompt-list').replaceChildren(...prompts.map((prompt) => el('li', {
    'data-prompt': `${prompt.server}/${prompt.name}`,
    onclick: () => {
      mark($('prompt-list'), 'prompt', `${prompt.server}/${prompt.name}`);
      const inputs = (prompt.arguments || []).map((argument) => [argument, el('input', { type: 'text', id: `p-${argument.name}`, 'data-path': argument.name })]);
      const lists = inputs.map(([argument, input]) => completeInto(input, (value) => ({
        server: prompt.server, kind: 'prompt', name: prompt.name, argument: argument.name, value, context: givenBesides(inputs, input),
      })));
      const holder = el('div', { id: 'prompt-result', class: 'result' });
      const get = async () => {
        const args = {};
        for (const [argument, input] of inputs) if (input.value !== '') args[argument.name] = input.value;
        holder.replaceChildren(el('p', { class: 'hint' }, 'getting…'));
        try {
          const result = await api('/api/prompt', { server: prompt.server, name: prompt.name, arguments: args });
          holder.className = 'result';
          put(holder,
            result.description ? el('p', { class: 'field-help' }, result.description) : null,
            ...(result.messages || []).map((message) => el('div', { class: 'message' },
              el('strong', {}, `${message.role}: `),
              message.content?.type === 'text'
                ? el('pre', { class: 'content text' }, message.content.text)
                : el('pre', {}, JSON.stringify(message.content, null, 2)))));
        } catch (error) {
          holder.className = 'result error';
          holder.replaceChildren(el('pre', {}, error.message));
        }
      };
      put($('prompt-detail'),
        el('h2', {}, prompt.title || prompt.name),
        el('p', { class: 'field-help' }, prompt.server),
        prompt.description ? el('p', {}, prompt.description) : null,
        el('form', { id: 'prompt-form', onsubmit: (event) => { event.preventDefault(); get(); } },
          ...inputs.map(([argument, input], i) => el('div', {},
            el('label', { for: input.id, class: argument.required ? 'required' : '' }, argument.name),
            argument.description ? el('div', { class: 'field-help' }, argument.description) : null,
            input, lists[i])),
          el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary', id: 'get' }, 'Get'))),
        holder);
    },
  }, el('span', {}, prompt.name), ' ', el('span', { class: 'server' }, prompt.server))));
}

// ---- completion

// Offers the server's completions of an argument as the user types (a
// datalist), the other arguments given as its context; `ask(value)`
// makes the request.
function completeInto(input, ask) {
  const list = el('datalist', { id: `${input.id}-values`, 'data-completes': input.id });
  input.setAttribute('list', list.id);
  input.setAttribute('autocomplete', 'off');
  let timer = null;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      try {
        const { values } = await api('/api/complete', ask(input.value));
        list.replaceChildren(...(values || []).slice(0, 100).map((value) => el('option', { value })));
      } catch {
        list.replaceChildren();
      }
      list.dataset.asked = input.value;
    }, 150);
  });
  return list;
}

// The other fields' values, by name, for a completion's context.
function givenBesides(inputs, input) {
  return Object.fromEntries(inputs.filter(([, other]) => other !== input && other.value !== '')
    .map(([name, other]) => [typeof name === 'string' ? name : name.name, other.value]));
}

// ---- skills

async function loadSkills() {
  const { skills, failed } = await api('/api/skills');
  $('skill-list').replaceChildren(...skills.map((skill) => el('li', {
    'data-skill': `${skill.server}/${skill.name || skill.uri}`,
    onclick: () => showSkill(skill),
  }, el('span', {}, skill.name || skill.uri), ' ', el('span', { class: 'server' }, skill.server))));
  if (skills.length === 0) $('skill-list').replaceChildren(el('li', { class: 'hint' }, 'No server offers skills.'));
  for (const failure of failed) problem(`${failure.server}: ${failure.error}`);
}

// A skill loaded (its SKILL.md checked against what the server lists: a
// mismatch is an error) with its files; `path`: one file, read and
// checked too.
async function showSkill(skill, path) {
  mark($('skill-list'), 'skill', `${skill.server}/${skill.name || skill.uri}`);
  const holder = $('skill-detail');
  holder.replaceChildren(el('p', { class: 'hint' }, 'loading and checking…'));
  try {
    const loaded = await api('/api/skill', { server: skill.server, uri: skill.uri, path });
    const file = loaded.file ? [el('div', { id: 'skill-file' },
      el('h3', {}, loaded.file.uri),
      typeof loaded.file.text === 'string'
        ? el('pre', { class: 'content text' }, loaded.file.text)
        : el('p', {}, `[${loaded.file.mimeType || 'binary'}, ${loaded.file.size} bytes]`))] : [];
    put(holder,
      el('h2', {}, loaded.name),
      el('p', { class: 'field-help' }, `${skill.server} · ${skill.uri}`),
      el('p', { class: 'verified', id: 'skill-verified' }, '✓ loaded; it matches what its server lists'),
      el('p', {}, loaded.description),
      el('pre', { class: 'content text', id: 'skill-text' }, loaded.markdown),
      el('h3', {}, 'Files'),
      el('ul', { id: 'skill-files' }, ...(loaded.files || []).map((uri) => el('li', {},
        el('button', { type: 'button', 'data-skill-file': uri, onclick: () => showSkill(skill, uri) }, uri)))),
      ...file);
  } catch (error) {
    holder.className = 'detail result error';
    holder.replaceChildren(el('pre', {}, error.message));
  }
}

// ---- start

document.addEventListener('DOMContentLoaded', () => {
  onShow.resources = () => loadResources().catch((error) => problem(error.message));
  onShow.prompts = () => loadPrompts().catch((error) => problem(error.message));
  onShow.skills = () => loadSkills().catch((error) => problem(error.message));
  for (const tab of document.querySelectorAll('nav .tab')) {
    tab.addEventListener('click', () => show(tab.id.slice('show-'.length)));
  }
  watchAsks(false);
  $('tool-search').addEventListener('input', renderToolList);
  Promise.all([loadServers(), loadTools()]).catch((error) => problem(error.message));
});
