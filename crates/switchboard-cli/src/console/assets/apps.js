// switchboard console: the host side of MCP Apps. A tool whose
// `_meta.ui.resourceUri` names a view gets it framed beside its result,
// from the sandbox origin (another port; the frame has no
// allow-same-origin, so its origin is opaque). Messages are taken only
// from that frame's window, and answered only to it. What the view asks
// of its server goes to /api/app/request, which sends it to that server
// only (and `tools/call` only of tools visible to apps).
'use strict';

const APP_PROTOCOL = '2026-01-26';
const APP_SIZES = {
  phone: { width: 375, height: 667 },
  tablet: { width: 768, height: 1024 },
  desktop: { width: null, height: 800 },
};
// The host's look, for views that follow it (the spec's standard
// variables; light-dark() follows the theme).
const APP_STYLES = {
  '--color-background-primary': 'light-dark(#ffffff, #1b1b1b)',
  '--color-background-secondary': 'light-dark(#f4f4f5, #262626)',
  '--color-text-primary': 'light-dark(#1b1b1b, #f4f4f5)',
  '--color-text-secondary': 'light-dark(#52525b, #a1a1aa)',
  '--color-text-danger': 'light-dark(#c0392b, #f87171)',
  '--color-text-success': 'light-dark(#1e8449, #4ade80)',
  '--color-border-primary': 'light-dark(#d4d4d8, #3f3f46)',
  '--color-ring-primary': 'light-dark(#2a6fdb, #60a5fa)',
  '--font-sans': 'system-ui, sans-serif',
  '--font-mono': 'ui-monospace, monospace',
  '--font-text-md-size': '14px',
  '--border-radius-md': '6px',
};
// The most a view may hand the console to save at once.
const APP_MAX_DOWNLOAD = 16 * 1024 * 1024;

// A name to save `uri`'s content under: its last segment, with nothing
// that could climb out of the downloads folder or hide what it is.
function appFileName(uri) {
  let last = '';
  try { last = decodeURIComponent(new URL(uri).pathname.split('/').pop() || ''); } catch { last = String(uri).split('/').pop() || ''; }
  const name = last.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.]+/, '').slice(0, 120);
  return name || 'download';
}

// What one `ui/download-file` entry saves: an embedded resource's text or
// bytes (a link is not fetched by the console).
function appDownloadable(item, refuse) {
  if (item?.type !== 'resource' || typeof item.resource !== 'object' || item.resource === null) {
    refuse(-32602, 'the console saves embedded resources only (a link is not fetched: open it with ui/open-link)');
  }
  const { uri, mimeType, text, blob } = item.resource;
  const type = typeof mimeType === 'string' ? mimeType : 'application/octet-stream';
  let bytes;
  if (typeof text === 'string') bytes = new TextEncoder().encode(text);
  else if (typeof blob === 'string') {
    try { bytes = Uint8Array.from(atob(blob), (c) => c.charCodeAt(0)); } catch { refuse(-32602, 'the resource\'s blob is not base64'); }
  } else refuse(-32602, 'the resource has neither text nor blob');
  return { name: appFileName(uri), type, bytes };
}

let appTheme = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
let appSize = 'desktop';
let currentApp = null;

// The view a tool names, if any (the deprecated flat key too).
function appUri(tool) {
  const meta = tool._meta || {};
  const uri = (meta.ui && typeof meta.ui.resourceUri === 'string') ? meta.ui.resourceUri : meta['ui/resourceUri'];
  return typeof uri === 'string' && uri.startsWith('ui://') ? uri : null;
}

// Who may call a tool: `model`, `app`, or both (the default).
function appVisibility(tool) {
  const visibility = tool._meta?.ui?.visibility;
  return Array.isArray(visibility) ? visibility.filter((v) => typeof v === 'string') : ['model', 'app'];
}

function appLog(text, kind = 'log') {
  const list = $('app-log');
  if (!list) return;
  list.append(el('li', { class: kind }, text));
  while (list.children.length > 200) list.firstElementChild.remove();
}

function appContext(frame) {
  const size = APP_SIZES[appSize];
  const width = size.width || Math.round(frame?.parentElement?.clientWidth || 800);
  return {
    theme: appTheme,
    displayMode: currentApp?.mode || 'inline',
    availableDisplayModes: ['inline', 'fullscreen'],
    containerDimensions: { width, maxHeight: size.height },
    locale: navigator.language || 'en',
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    platform: appSize === 'desktop' ? 'web' : 'mobile',
    userAgent: 'switchboard console',
    deviceCapabilities: { touch: appSize !== 'desktop', hover: appSize === 'desktop' },
    styles: { variables: APP_STYLES },
  };
}

// A question for the user in the page (no `confirm()`: a view must not
// be able to block the page).
function appConfirm(title, lines, yes) {
  return new Promise((resolve) => {
    const modal = el('div', { class: 'modal', 'data-app-confirm': '', role: 'dialog', 'aria-modal': 'true' });
    const done = (answer) => { modal.remove(); resolve(answer); };
    modal.append(el('div', { class: 'box' }, el('h3', {}, title), ...lines,
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', 'data-confirm': 'yes', onclick: () => done(true) }, yes),
        el('button', { type: 'button', 'data-confirm': 'no', onclick: () => done(false) }, 'No'))));
    document.body.append(modal);
  });
}

class AppHost {
  constructor(tool, opened, holder) {
    this.tool = tool;
    this.opened = opened;
    this.mode = 'inline';
    this.initialized = false;
    this.queue = [];
    this.next = 1;
    this.waiting = new Map();
    this.frame = el('iframe', {
      class: 'app-frame',
      title: `${tool.server} app: ${opened.uri}`,
      sandbox: 'allow-scripts allow-forms',
      allow: opened.allow || null,
      referrerpolicy: 'no-referrer',
      'data-app': tool.name,
    });
    this.frame.classList.toggle('bordered', opened.prefersBorder !== false);
    this.listener = (event) => this.receive(event);
    window.addEventListener('message', this.listener);
    const notes = (opened.notes || []).map((note) => el('p', { class: 'warning' }, `⚠ ${note}`));
    put(holder,
      el('div', { class: 'app-bar' },
        el('span', { class: 'field-help' }, `app ${opened.uri} from ${opened.server}, served from ${opened.origin}`),
        el('details', {}, el('summary', {}, 'its policy'), el('code', { id: 'app-policy' }, opened.policy))),
      ...notes,
      el('div', { class: `app-stage size-${appSize}`, id: 'app-stage' }, this.frame),
      el('h3', {}, 'What the app said'),
      el('ul', { id: 'app-log' }));
    this.resize();
    this.frame.src = opened.url;
  }

  resize() {
    const size = APP_SIZES[appSize];
    this.frame.style.width = size.width ? `${size.width}px` : '100%';
    if (!this.frame.style.height) this.frame.style.height = '320px';
    this.frame.parentElement?.classList.remove('size-phone', 'size-tablet', 'size-desktop');
    this.frame.parentElement?.classList.add(`size-${appSize}`);
  }

  post(message) {
    this.frame.contentWindow?.postMessage(message, '*');
  }

  notify(method, params) {
    const message = { jsonrpc: '2.0', method, params };
    if (this.initialized) this.post(message); else this.queue.push(message);
  }

  ask(method, params, ms = 3000) {
    const id = `host-${this.next++}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.waiting.delete(id); resolve(null); }, ms);
      this.waiting.set(id, (message) => { clearTimeout(timer); resolve(message); });
      this.post({ jsonrpc: '2.0', id, method, params });
    });
  }

  answer(id, result, error) {
    this.post(error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result });
  }

  toolInput(args) { this.notify('ui/notifications/tool-input', { arguments: args }); }
  toolResult(result) { this.notify('ui/notifications/tool-result', result); }
  toolCancelled(reason) { this.notify('ui/notifications/tool-cancelled', { reason }); }

  contextChanged() {
    this.resize();
    if (this.initialized) this.post({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: appContext(this.frame) });
  }

  // Tears the view down: it is asked first (and given a moment), then
  // its frame and its address go.
  async close() {
    if (this.closed) return;
    this.closed = true;
    if (this.initialized) await this.ask('ui/resource-teardown', { reason: 'the console closes the view' }, 1500);
    window.removeEventListener('message', this.listener);
    this.frame.remove();
    await api('/api/app/close', { view: this.opened.view }).catch(() => {});
  }

  async receive(event) {
    // Only this frame's window; its origin is opaque ("null").
    if (event.source !== this.frame.contentWindow || this.closed) return;
    const message = event.data;
    if (!message || typeof message !== 'object' || message.jsonrpc !== '2.0') return;
    if (message.method === undefined) {
      const waiting = this.waiting.get(message.id);
      if (waiting) { this.waiting.delete(message.id); waiting(message); }
      return;
    }
    const { id, method } = message;
    const params = message.params && typeof message.params === 'object' ? message.params : {};
    const isRequest = id !== undefined && id !== null;
    try {
      const result = await this.handle(method, params);
      if (isRequest) this.answer(id, result ?? {});
    } catch (error) {
      if (isRequest) this.answer(id, undefined, { code: error.code ?? -32603, message: String(error.message || error) });
    }
  }

  async handle(method, params) {
    const refuse = (code, text) => { const error = new Error(text); error.code = code; throw error; };
    switch (method) {
      case 'ui/initialize':
        return {
          protocolVersion: APP_PROTOCOL,
          hostInfo: { name: 'switchboard console', version: '1' },
          hostCapabilities: {
            openLinks: {}, downloadFile: {}, serverTools: {}, serverResources: {}, logging: {},
            message: { text: {} }, updateModelContext: { text: {} },
            sandbox: { csp: this.opened.csp || {}, permissions: this.opened.permissions || {} },
          },
          hostContext: { ...appContext(this.frame), toolInfo: { tool: this.opened.tool } },
        };
      case 'ui/notifications/initialized':
        this.initialized = true;
        this.frame.dataset.initialized = 'true';
        for (const queued of this.queue.splice(0)) this.post(queued);
        return undefined;
      case 'ui/notifications/size-changed': {
        const height = Number(params.height);
        if (Number.isFinite(height) && height > 0) this.frame.style.height = `${Math.min(Math.max(Math.ceil(height), 40), 4000)}px`;
        return undefined;
      }
      case 'notifications/message': {
        const data = typeof params.data === 'string' ? params.data : JSON.stringify(params.data);
        appLog(`[${params.level || 'info'}] ${data}`);
        return undefined;
      }
      case 'ui/notifications/request-teardown':
        this.close();
        return undefined;
      case 'ui/open-link': {
        let url;
        try { url = new URL(String(params.url)); } catch { refuse(-32602, 'not a URL'); }
        if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse(-32602, 'only http and https links open');
        const yes = await appConfirm('The app wants to open a page', [
          el('p', {}, 'on ', el('strong', { class: 'host' }, url.host)),
          el('pre', { class: 'url' }, url.href)], `Open ${url.host}`);
        if (!yes) refuse(-32000, 'the user declined to open the link');
        window.open(url.href, '_blank', 'noopener,noreferrer');
        return {};
      }
      case 'ui/download-file': {
        const items = Array.isArray(params.contents) ? params.contents : [];
        if (items.length === 0 || items.length > 16) refuse(-32602, 'between 1 and 16 files at once');
        const files = items.map((item) => appDownloadable(item, refuse));
        const size = files.reduce((sum, file) => sum + file.bytes.length, 0);
        if (size > APP_MAX_DOWNLOAD) refuse(-32000, `${size} bytes: the console saves at most ${APP_MAX_DOWNLOAD} at once`);
        const yes = await appConfirm(`The app wants to save ${files.length === 1 ? 'a file' : `${files.length} files`}`,
          [el('ul', { class: 'downloads' }, ...files.map((file) => el('li', {},
            el('strong', { 'data-download': file.name }, file.name), ` (${file.bytes.length} bytes, ${file.type})`)))],
          'Save');
        if (!yes) refuse(-32000, 'the user declined the download');
        for (const file of files) {
          const url = URL.createObjectURL(new Blob([file.bytes], { type: 'application/octet-stream' }));
          const link = el('a', { href: url, download: file.name, hidden: true });
          document.body.append(link);
          link.click();
          link.remove();
          setTimeout(() => URL.revokeObjectURL(url), 60000);
          appLog(`saved ${file.name} (${file.bytes.length} bytes)`, 'download');
        }
        return {};
      }
      case 'ui/message': {
        const blocks = Array.isArray(params.content) ? params.content : [params.content];
        const text = blocks.map((block) => (block?.type === 'text' ? block.text : JSON.stringify(block))).join('\n');
        appLog(`message for the model (${params.role || 'user'}): ${text}`, 'message');
        return {};
      }
      case 'ui/update-model-context': {
        const blocks = Array.isArray(params.content) ? params.content : [];
        const text = blocks.map((block) => (block?.type === 'text' ? block.text : JSON.stringify(block))).join('\n');
        appLog(`model context: ${text}${params.structuredContent ? ` ${JSON.stringify(params.structuredContent)}` : ''}`, 'context');
        return {};
      }
      case 'ui/request-display-mode': {
        if (params.mode === 'inline' || params.mode === 'fullscreen') {
          this.mode = params.mode;
          document.getElementById('app-stage')?.classList.toggle('fullscreen', this.mode === 'fullscreen');
          this.contextChanged();
        }
        return { mode: this.mode };
      }
      case 'ping':
        return {};
      case 'tools/call':
      case 'resources/read':
      case 'resources/list': {
        const answer = await api('/api/app/request', { view: this.opened.view, method, params });
        if (answer.error) {
          if (method === 'tools/call') appLog(`refused ${params.name}: ${answer.error.message}`, 'refused');
          refuse(answer.error.code, answer.error.message);
        }
        if (method === 'tools/call') appLog(`called ${params.name}`, 'call');
        return answer.result;
      }
      default:
        return refuse(-32601, `the console does not handle ${method}`);
    }
  }
}

// Opens `tool`'s app in `holder` (closing the one before); the host, or
// null when it cannot be opened (said in the holder).
async function openApp(tool, holder) {
  if (currentApp) { const closing = currentApp; currentApp = null; await closing.close(); }
  try {
    const opened = await api('/api/app/open', { name: tool.name });
    currentApp = new AppHost(tool, opened, holder);
    return currentApp;
  } catch (error) {
    holder.replaceChildren(el('p', { class: 'warning' }, `The app could not be opened: ${error.message}`));
    return null;
  }
}

// The size and theme the views are shown at.
function appControls() {
  const sizes = el('select', { id: 'app-size', 'aria-label': 'preview size' },
    ...Object.keys(APP_SIZES).map((name) => el('option', { value: name, selected: name === appSize }, name)));
  sizes.addEventListener('change', () => { appSize = sizes.value; currentApp?.contextChanged(); });
  const theme = el('select', { id: 'app-theme', 'aria-label': 'theme' },
    ...['light', 'dark'].map((name) => el('option', { value: name, selected: name === appTheme }, name)));
  theme.addEventListener('change', () => {
    appTheme = theme.value;
    document.getElementById('app-stage')?.classList.toggle('dark', appTheme === 'dark');
    currentApp?.contextChanged();
  });
  return el('div', { class: 'app-controls' }, el('span', { class: 'field-help' }, 'app preview: '), sizes, theme);
}
