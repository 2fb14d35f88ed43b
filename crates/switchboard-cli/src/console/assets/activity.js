// switchboard console: the Activity tab — what the servers say on their
// own (log lines, updates of subscribed resources, list changes, task
// statuses, state changes), asked for while the tab is shown; and the
// Subscribe button of a resource.
'use strict';

let activityNext = null;
let activityTimer = null;

async function activityPoll() {
  const page = await api(`/api/activity${activityNext === null ? '' : `?after=${activityNext}`}`);
  const list = $('activity-list');
  for (const entry of page.entries) {
    activityNext = entry.seq;
    list.prepend(el('li', { class: `kind-${entry.kind}`, 'data-kind': entry.kind },
      el('span', { class: 'field-help' }, `${(entry.atMs / 1000).toFixed(3)} `),
      el('strong', {}, entry.server), ' ',
      el('span', { class: 'badge' }, entry.kind), ' ',
      entry.text));
  }
  while (list.children.length > 2000) list.lastElementChild.remove();
}

onShow.activity = () => {
  activityPoll().catch((error) => problem(error.message));
  clearInterval(activityTimer);
  activityTimer = setInterval(() => {
    if ($('activity').hidden) { clearInterval(activityTimer); return; }
    activityPoll().catch((error) => problem(error.message));
  }, 400);
};

// The button that subscribes the page to `uri` of `server` (its updates
// then show in the Activity tab), or stops.
const subscribed = new Set();

function subscribeButton(server, uri) {
  const key = `${server} ${uri}`;
  const button = el('button', { type: 'button', id: 'subscribe' });
  const label = () => { button.textContent = subscribed.has(key) ? 'Unsubscribe' : 'Subscribe to updates'; };
  label();
  button.addEventListener('click', async () => {
    const on = !subscribed.has(key);
    button.disabled = true;
    try {
      await api('/api/subscribe', { server, uri, subscribe: on });
      if (on) subscribed.add(key); else subscribed.delete(key);
      problem('');
    } catch (error) {
      problem(`${on ? 'Subscribing to' : 'Unsubscribing from'} ${uri}: ${error.message}`);
    }
    button.disabled = false;
    label();
  });
  return button;
}
