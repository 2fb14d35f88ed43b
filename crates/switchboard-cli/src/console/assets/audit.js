// switchboard console: the Audit tab — the audit log (`console --audit
// FILE`), its chain verified each time the tab is shown or asked, and its
// newest records.
'use strict';

async function loadAudit() {
  const view = await api('/api/audit');
  const verdict = $('audit-verdict');
  const body = $('audit-table').tBodies[0];
  if (!view.file) {
    verdict.className = 'hint';
    verdict.textContent = 'No audit log: start the console with --audit FILE to write the page\'s calls to one and see it here (a log `serve --audit` writes can be shown too).';
    body.replaceChildren();
    return;
  }
  const v = view.verdict;
  verdict.className = v.intact ? 'verified' : 'error';
  verdict.textContent = v.intact
    ? `✓ ${view.file}: intact, ${v.records} records in ${v.files} file(s)`
      + (v.dropped ? `, ${v.dropped} older file(s) removed by retention` : '')
      + (v.unanchored ? `, ${v.unanchored} line(s) after the anchor` : '')
      + (view.writing ? '' : ' — written by another gateway; shown, not written')
    : `✗ ${view.file} does not verify: ${v.error}`;
  body.replaceChildren(...view.records.map((record) => el('tr', { 'data-kind': record.kind, 'data-outcome': record.outcome },
    el('td', {}, new Date(record.ts_ms).toISOString().replace('T', ' ').replace('Z', '')),
    el('td', {}, record.kind),
    el('td', {}, record.server || ''),
    el('td', {}, record.name || ''),
    el('td', {}, record.outcome || '', record.message ? el('span', { class: 'detail-text' }, record.message) : null),
    el('td', {}, `${record.ms ?? ''} ms`),
    el('td', {}, record.session || ''))));
}

onShow.audit = () => loadAudit().catch((error) => problem(error.message));

document.addEventListener('DOMContentLoaded', () => {
  $('audit-verify').addEventListener('click', () => loadAudit().catch((error) => problem(error.message)));
});
