// switchboard console: the configuration changed from the page — a server
// added (the fields of `switchboard add`), enabled, disabled or removed in
// the file it is configured in. The server decides and writes; this page
// only asks and shows what it said.
'use strict';

const lines = (text) => text.split('\n').map((line) => line.trim()).filter(Boolean);

// Enable, disable or remove, written to the server's file.
function configActions(server) {
  if (server.pending) return null;
  const change = (action, label, question) => async (event) => {
    if (question && !await confirmed(question, label)) return;
    event.target.disabled = true;
    try {
      const done = await api('/api/config', { name: server.name, action });
      said(`${done.done} ${server.name} ${done.done === 'removed' ? 'from' : 'in'} ${done.file}${done.note ? ` (${done.note})` : ''}${done.nowFrom ? `; ${server.name} is still configured in ${done.nowFrom}, used now` : ''}`);
      problem('');
    } catch (error) {
      problem(`${action} ${server.name}: ${error.message}`);
    }
    const named = (servers) => servers.find((s) => s.name === server.name);
    watchServers({
      enable: (servers) => named(servers)?.state !== 'disabled',
      disable: (servers) => named(servers)?.state === 'disabled',
      remove: (servers) => named(servers)?.file !== server.file,
    }[action]);
  };
  const button = (action, label, question) => el('button', {
    type: 'button', 'data-config': action, 'data-config-server': server.name, onclick: change(action, label, question),
  }, label);
  if (server.skipped) return null;
  return el('span', { class: 'config-actions' },
    server.enabledInFile === false
      ? button('enable', 'Enable in file')
      : button('disable', 'Disable in file'),
    button('remove', 'Remove', `Remove ${server.name} from ${server.source}?`));
}

// An in-page yes or no (the page's own modal, not the browser's).
function confirmed(question, yes) {
  return new Promise((resolve) => {
    const modal = el('div', { class: 'modal', 'data-confirm': yes, role: 'dialog', 'aria-modal': 'true' });
    const answer = (value) => () => { modal.remove(); resolve(value); };
    modal.append(el('div', { class: 'box' },
      el('p', {}, question),
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'primary', 'data-confirm-yes': yes, onclick: answer(true) }, yes),
        el('button', { type: 'button', onclick: answer(false) }, 'Cancel'))));
    document.body.append(modal);
  });
}

// What the last change did, above the table.
function said(text) {
  const node = $('config-said');
  node.textContent = text;
  node.hidden = !text;
}

function addForm() {
  const form = $('add-form');
  const kind = () => form.querySelector('input[name="add-kind"]:checked').value;
  const sync = () => {
    for (const part of form.querySelectorAll('[data-kind]')) part.hidden = part.dataset.kind !== kind();
  };
  for (const radio of form.querySelectorAll('input[name="add-kind"]')) radio.addEventListener('change', sync);
  sync();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const request = { name: $('add-name').value.trim(), scope: $('add-scope').value };
    if (kind() === 'url') {
      request.url = $('add-url').value.trim();
      request.headers = lines($('add-headers').value);
      request.transport = $('add-transport').value;
    } else {
      request.command = [$('add-command').value.trim(), ...lines($('add-args').value)].filter(Boolean);
      request.env = lines($('add-env').value);
    }
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      const added = await api('/api/add', request);
      const notes = [added.note, added.gitIgnored, added.alsoConfiguredIn
        ? `${added.added} is also configured in ${added.alsoConfiguredIn}; the higher scope (local > project > user) is used` : null];
      said([`added ${added.added} to ${added.file}`, ...notes.filter(Boolean)].join('; '));
      problem('');
      form.reset();
      sync();
      $('add-box').open = false;
      watchServers((servers) => servers.some((s) => s.name === added.added && s.file === added.file));
    } catch (error) {
      problem(`Adding ${request.name || 'a server'}: ${error.message}`);
    } finally {
      button.disabled = false;
    }
  });
}

document.addEventListener('DOMContentLoaded', addForm);
