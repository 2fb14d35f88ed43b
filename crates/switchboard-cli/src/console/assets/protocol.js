// switchboard console: the protocol view. Every JSON-RPC message each
// server's connection carried (and, in the background session's console,
// each host's connection to the session), asked for while the tab is shown (what
// came after the last one this page has), filtered in the page. Rows are
// added in batches and only the newest are in the document, so a server
// sending thousands a second does not stall the page.
'use strict';

const PROTOCOL_KEEP = 20000; // messages held by the page
const PROTOCOL_ROWS = 400; // rows in the document (the newest)
const protocolMessages = [];
let protocolNext = null;
let protocolTimer = null;
let protocolBusy = false;

function protocolMatches(entry) {
  const direction = $('protocol-direction').value;
  if (direction && entry.direction !== direction) return false;
  const query = $('protocol-filter').value.trim().toLowerCase();
  if (!query) return true;
  return [entry.server, entry.host ? 'host' : 'server', entry.method, entry.id, entry.kind, entry.text]
    .some((text) => (text || '').toLowerCase().includes(query));
}

function protocolRow(entry) {
  // Arrows are switchboard's: → it sent, ← it received; a host's
  // connection to the gateway is named "host …".
  const row = el('tr', { 'data-seq': entry.seq, 'data-host': entry.host ? entry.server : null, class: `dir-${entry.direction} kind-${entry.kind}${entry.host ? ' host' : ''}` },
    el('td', {}, (entry.atMs / 1000).toFixed(3)),
    el('td', {}, entry.host ? `host ${entry.server}` : entry.server),
    el('td', { title: entry.direction }, entry.direction === 'sent' ? '→' : '←'),
    el('td', {}, entry.kind),
    el('td', { class: 'method' }, entry.method || ''),
    el('td', {}, entry.id ?? ''),
    el('td', {}, entry.latencyMs == null ? '' : `${entry.latencyMs} ms`),
    el('td', {}, String(entry.size)));
  row.entry = entry;
  return row;
}

// A row clicked: its whole message (one listener for the table).
function protocolShow(event) {
  const entry = event.target.closest('tr')?.entry;
  if (!entry) return;
  const shown = $('protocol-message');
  let text = entry.text;
  try { text = JSON.stringify(JSON.parse(entry.text), null, 2); } catch { /* as sent */ }
  shown.textContent = text;
  shown.hidden = false;
}

function protocolCount() {
  const rows = $('protocol-table').tBodies[0].rows.length;
  $('protocol-count').textContent = `${protocolMessages.length} messages, ${rows} shown`;
}

// The whole table again (a filter changed).
function protocolRender() {
  const shown = protocolMessages.filter(protocolMatches).slice(-PROTOCOL_ROWS);
  $('protocol-table').tBodies[0].replaceChildren(...shown.map(protocolRow));
  protocolCount();
}

// New messages: appended, the oldest rows dropped.
function protocolAppend(entries) {
  protocolMessages.push(...entries);
  if (protocolMessages.length > PROTOCOL_KEEP) protocolMessages.splice(0, protocolMessages.length - PROTOCOL_KEEP);
  const body = $('protocol-table').tBodies[0];
  const fragment = document.createDocumentFragment();
  for (const entry of entries.slice(-PROTOCOL_ROWS)) {
    if (protocolMatches(entry)) fragment.append(protocolRow(entry));
  }
  body.append(fragment);
  let extra = body.rows.length - PROTOCOL_ROWS;
  while (extra-- > 0) body.firstElementChild.remove();
  protocolCount();
  if ($('protocol-follow').checked) {
    const section = $('protocol');
    section.scrollTop = section.scrollHeight;
  }
}

async function protocolPoll() {
  if (protocolBusy) return;
  protocolBusy = true;
  try {
    for (;;) {
      const query = protocolNext === null ? '' : `?after=${protocolNext}`;
      const page = await api(`/api/protocol${query}`);
      if (page.next !== null && page.next !== undefined) protocolNext = page.next;
      if (page.dropped) problem('Some messages were dropped before this page saw them (the console keeps the newest).');
      if (page.entries.length > 0) protocolAppend(page.entries);
      // A full page: there is more.
      if (page.entries.length < 5000) break;
    }
  } finally {
    protocolBusy = false;
  }
}

onShow.protocol = () => {
  protocolPoll().catch((error) => problem(error.message));
  clearInterval(protocolTimer);
  protocolTimer = setInterval(() => {
    if ($('protocol').hidden) {
      clearInterval(protocolTimer);
      return;
    }
    protocolPoll().catch((error) => problem(error.message));
  }, 250);
};

document.addEventListener('DOMContentLoaded', () => {
  $('protocol-table').tBodies[0].addEventListener('click', protocolShow);
  $('protocol-filter').addEventListener('input', protocolRender);
  $('protocol-filter').addEventListener('change', protocolRender);
  $('protocol-direction').addEventListener('change', protocolRender);
});
