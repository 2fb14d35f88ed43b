// switchboard console: the Activity tab — what the servers say on their
// own (log lines, updates of subscribed resources, list changes, task
// statuses, state changes), asked for while the tab is shown; the
// Subscribe button of a resource; and the Tasks tab.
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

// ---- tasks: every task the console saw go by (whoever started it), its
// latest status; polled or cancelled from here.

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
let tasksTimer = null;

async function loadTasks() {
  const { tasks } = await api('/api/tasks');
  const body = $('task-table').tBodies[0];
  body.replaceChildren(...tasks.map((task) => {
    const act = (action) => async (event) => {
      event.target.disabled = true;
      try {
        await api('/api/task', { server: task.server, taskId: task.taskId, action });
        problem('');
      } catch (error) {
        problem(`${action} task ${task.taskId} of ${task.server}: ${error.message}`);
      }
      loadTasks().catch((error) => problem(error.message));
    };
    const key = `${task.server}/${task.taskId}`;
    return el('tr', { 'data-task': key },
      el('td', {}, task.server),
      el('td', {}, task.taskId),
      el('td', {}, el('span', { class: `state task-${task.status}` }, task.status)),
      el('td', {}, task.statusMessage || ''),
      el('td', {}, task.lastUpdatedAt || task.createdAt || ''),
      el('td', {},
        el('button', { type: 'button', 'data-poll': key, onclick: act('poll') }, 'Poll'), ' ',
        TERMINAL.has(task.status) ? null : el('button', { type: 'button', 'data-cancel-task': key, onclick: act('cancel') }, 'Cancel')));
  }));
  if (tasks.length === 0) body.replaceChildren(el('tr', {}, el('td', { colspan: 6, class: 'hint' }, 'No task seen yet: a tool that runs as a task shows here while it runs.')));
}

onShow.tasks = () => {
  loadTasks().catch((error) => problem(error.message));
  clearInterval(tasksTimer);
  tasksTimer = setInterval(() => {
    if ($('tasks').hidden) { clearInterval(tasksTimer); return; }
    loadTasks().catch((error) => problem(error.message));
  }, 500);
};
