// reasonix dashboard. Hand-written, no build step, nothing loaded from elsewhere.
// Everything the model or a tool wrote is untrusted: it reaches the page only as text nodes
// (textContent, createTextNode), never as HTML — except the server's sanitised rendering of
// the model's markdown (showMarkdown below).
'use strict';

(() => {
  const ROLE_COLORS = { executor: 'var(--executor)', planner: 'var(--planner)' };
  const main = document.getElementById('main');
  const conn = document.getElementById('conn');
  const where = document.getElementById('where');
  let csrf = null;
  let current = null; // the open session view: {id, source, ...}
  let listTimer = null;

  // -- DOM helpers (text only) -----------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else if (key === 'data') Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function toast(message, kind) {
    const box = el('div', { class: 'toast ' + (kind || 'error'), role: 'status', text: message });
    document.body.append(box);
    setTimeout(() => box.remove(), 6000);
  }

  const usd = (n) => '$' + (n || 0).toFixed(n >= 1 ? 2 : n >= 0.01 ? 3 : 4);
  const num = (n) => (n || 0).toLocaleString('en-US');
  const pct = (a, b) => (b ? Math.round((100 * a) / b) + '%' : '–');

  function ago(seconds) {
    const d = Date.now() / 1000 - seconds;
    if (d < 60) return 'just now';
    if (d < 3600) return Math.floor(d / 60) + ' min ago';
    if (d < 86400) return Math.floor(d / 3600) + ' h ago';
    return new Date(seconds * 1000).toLocaleDateString();
  }

  // -- the API ---------------------------------------------------------------------------------

  async function api(path, options) {
    const opts = options || {};
    const init = { method: opts.method || 'GET', headers: {}, credentials: 'same-origin' };
    if (init.method !== 'GET') {
      init.headers['Content-Type'] = 'application/json';
      init.headers['X-CSRF-Token'] = csrf || '';
      init.body = JSON.stringify(opts.body || {});
    }
    const response = await fetch(path, init);
    let data = {};
    try {
      data = await response.json();
    } catch (_) {
      data = {};
    }
    if (response.status === 401) {
      showLogin();
      throw new Error(data.error || 'not logged in');
    }
    if (!response.ok) throw new Error(data.error || 'HTTP ' + response.status);
    return data;
  }

  // -- start-up and login ----------------------------------------------------------------------

  async function boot() {
    const match = /[#&]token=([^&]+)/.exec(location.hash);
    if (match) {
      // The token leaves the address bar (and the history) before anything else happens.
      history.replaceState(null, '', location.pathname + '#/');
      const ok = await login({ token: decodeURIComponent(match[1]) });
      if (!ok) return;
    }
    const response = await fetch('/api/me', { credentials: 'same-origin' });
    if (!response.ok) {
      showLogin();
      return;
    }
    const me = await response.json();
    csrf = me.csrf;
    where.textContent = me.all ? 'every folder' : me.workspace;
    window.addEventListener('hashchange', route);
    route();
  }

  async function login(body) {
    const response = await fetch('/api/auth', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      showLogin(data.error || 'login refused');
      return false;
    }
    csrf = data.csrf;
    return true;
  }

  function showLogin(message) {
    stopSession();
    stopList();
    clear(main);
    where.textContent = '';
    const input = el('input', {
      type: 'password',
      name: 'password',
      autocomplete: 'current-password',
      placeholder: 'Password',
      'aria-label': 'Password',
    });
    const form = el(
      'form',
      {
        class: 'login-form',
        onsubmit: async (event) => {
          event.preventDefault();
          if (await login({ password: input.value })) location.reload();
        },
      },
      input,
      el('button', { type: 'submit', class: 'primary', text: 'Log in' }),
    );
    main.append(
      el(
        'section',
        { class: 'login card', id: 'login' },
        el('h1', { text: 'Not logged in' }),
        el('p', {
          text:
            'Open the link that `reasonix serve` printed in your terminal: it carries a one-time ' +
            'access token. A server listening on the network also accepts its password.',
        }),
        message ? el('p', { class: 'error-text', text: message }) : null,
        form,
      ),
    );
  }

  function route() {
    stopSession();
    stopList();
    const match = /^#\/s\/([\w.-]+)$/.exec(location.hash);
    if (match) showSession(match[1]);
    else showList();
  }

  // -- the sessions list -----------------------------------------------------------------------

  function stopList() {
    if (listTimer) clearInterval(listTimer);
    listTimer = null;
  }

  async function showList() {
    clear(main);
    const text = el('textarea', {
      rows: 2,
      placeholder: 'What should the agent do? (/plan TASK plans first)',
      'aria-label': 'First message of a new session',
    });
    const start = async (event) => {
      event.preventDefault();
      try {
        const made = await api('/api/sessions', { method: 'POST', body: { text: text.value } });
        location.hash = '#/s/' + made.id;
      } catch (err) {
        toast(err.message);
      }
    };
    const list = el('div', { class: 'sessions', id: 'sessions' });
    main.append(
      el(
        'section',
        { class: 'list-view' },
        el('h1', { text: 'Sessions' }),
        el(
          'form',
          { class: 'new-session card', onsubmit: start },
          text,
          el('button', { type: 'submit', class: 'primary', text: 'New session' }),
        ),
        list,
      ),
    );
    const refresh = async () => {
      try {
        const data = await api('/api/sessions');
        renderList(list, data.sessions);
      } catch (err) {
        if (err.message !== 'not logged in') toast(err.message);
      }
    };
    await refresh();
    listTimer = setInterval(refresh, 5000);
  }

  function renderList(list, sessions) {
    clear(list);
    if (!sessions.length) {
      list.append(el('p', { class: 'muted', text: 'No sessions in this folder yet.' }));
      return;
    }
    for (const s of sessions) {
      list.append(
        el(
          'a',
          { class: 'session-row card', href: '#/s/' + s.id, data: { id: s.id } },
          el(
            'div',
            { class: 'row-main' },
            el('span', { class: 'title', text: s.title || '(untitled session)' }),
            el('span', { class: 'pill state-' + s.state.replace(/\s+/g, '-'), text: s.state }),
          ),
          el(
            'div',
            { class: 'row-meta muted' },
            el('span', { title: new Date(s.updated_at * 1000).toLocaleString(), text: ago(s.updated_at) }),
            el('span', { text: s.route ? s.route.replace(/_/g, ' ') : 'no turns yet' }),
            el('span', { text: usd(s.cost_usd) + ' · ' + s.requests + ' requests' }),
            el('span', { class: 'status', text: s.status }),
          ),
          el('div', { class: 'row-meta muted small', text: s.id + (s.workspace ? ' · ' + s.workspace : '') }),
        ),
      );
    }
  }

  // -- one session -----------------------------------------------------------------------------

  function stopSession() {
    if (current && current.source) current.source.close();
    current = null;
    conn.hidden = true;
  }

  async function showSession(id) {
    clear(main);
    let info;
    try {
      info = await api('/api/sessions/' + encodeURIComponent(id));
    } catch (err) {
      main.append(el('p', { class: 'pad error-text', text: err.message }));
      return;
    }
    const view = makeView(id, info);
    current = view;
    main.append(view.root);
    connect(view);
  }

  function makeView(id, info) {
    const v = {
      id,
      info,
      lastId: 0,
      count: 0,
      gap: false,
      running: Boolean(info.running),
      blocks: {}, // role -> {kind, node}
      shownText: {}, // role -> text shown since its turn started
      calls: {}, // call id -> card
      approvals: {}, // approval id -> element
      costs: {}, // role -> totals
      requests: [], // [{role, hit, miss, cost}]
    };
    v.transcript = el('div', { class: 'transcript', id: 'transcript' });
    v.approvalList = el('div', { class: 'approval-list' });
    // messages typed during a turn, sent when it ends (enqueue)
    v.queueBox = el('div', { class: 'queue', id: 'queue' });
    v.approvalCard = el(
      'section',
      { class: 'card approvals', id: 'approvals', hidden: true },
      el('h2', { text: 'Waiting for you' }),
      v.approvalList,
    );
    v.planBody = el('div', { class: 'plan-body' }, el('p', { class: 'muted', text: 'No plan yet.' }));
    v.todoList = el('ol', { class: 'todo', id: 'todo' });
    v.costBody = el('div', { class: 'cost-body', id: 'cost' });
    v.chart = el('div', { class: 'chart', id: 'chart' });
    v.state = el('span', { class: 'pill', id: 'state' });
    v.interrupt = el('button', {
      class: 'danger',
      type: 'button',
      text: 'Interrupt',
      onclick: () => post(v, '/interrupt').catch((err) => toast(err.message)),
    });
    v.input = el('textarea', {
      rows: 2,
      id: 'message',
      placeholder: 'Next message · /plan TASK plans first · !CMD runs a command',
      title: '/plan TASK plans first, /approve runs a waiting plan, !CMD runs a shell command yourself (its output joins your next message), /help lists the commands; Ctrl+Enter sends',
      'aria-label': 'Next message',
      onkeydown: (event) => {
        if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) send(v, event);
      },
    });
    v.send = el('button', { type: 'submit', class: 'primary', text: 'Send' });
    // Images dropped on the message box or picked: sent with the next message (the server
    // checks each from its bytes and refuses what DeepSeek would).
    v.images = [];
    v.imageNote = el('span', { class: 'muted small', id: 'image-note' });
    v.imagePick = el('input', {
      type: 'file',
      accept: 'image/png,image/jpeg,image/gif,image/webp',
      multiple: true,
      id: 'image-pick',
      'aria-label': 'Attach images',
      onchange: () => addImages(v, v.imagePick.files),
    });
    v.input.addEventListener('dragover', (event) => event.preventDefault());
    v.input.addEventListener('drop', (event) => {
      if (!event.dataTransfer || !event.dataTransfer.files.length) return;
      event.preventDefault();
      addImages(v, event.dataTransfer.files);
    });
    const readOnly = !info.writable;
    v.root = el(
      'div',
      { class: 'session', id: 'session', data: { sessionId: id, lastId: '0', count: '0', gap: '0' } },
      el(
        'section',
        { class: 'session-head' },
        el('a', { href: '#/', class: 'back', text: '← Sessions' }),
        el('h1', { text: info.title || '(untitled session)' }),
        el(
          'div',
          { class: 'head-meta' },
          v.state,
          el('span', { class: 'muted small', text: id }),
          info.mode ? modeSelect(v, info.mode, info.modes || []) : null,
          v.interrupt,
        ),
        readOnly
          ? el('p', { class: 'banner', id: 'read-only', text: 'Read-only: ' + (info.read_only_reason || 'this session cannot be written here.') })
          : null,
        commandBar(v),
      ),
      v.approvalCard,
      el(
        'div',
        { class: 'columns' },
        el('section', { class: 'main-col' }, v.transcript, v.queueBox),
        el(
          'aside',
          { class: 'side-col' },
          el('section', { class: 'card', id: 'plan' }, el('h2', { text: 'Plan' }), v.planBody, v.todoList),
          el('section', { class: 'card', id: 'cost-card' }, el('h2', { text: 'Cost and cache' }), v.costBody, v.chart),
        ),
      ),
      el(
        'form',
        { class: 'composer', onsubmit: (event) => send(v, event) },
        v.input,
        v.imagePick,
        v.imageNote,
        v.send,
      ),
    );
    if (readOnly) {
      v.input.disabled = true;
      v.send.disabled = true;
      v.commandRun.disabled = true;
    }
    setRunning(v, v.running);
    renderCost(v);
    return v;
  }

  // The server's one command table (GET /api/commands): every command it lists runs through
  // the one generic route, POST /api/sessions/{sid}/commands/{name}.
  function commandBar(v) {
    v.commandSelect = el('select', { class: 'command', id: 'command', 'aria-label': 'Command' });
    v.commandArgs = el('input', { type: 'text', id: 'command-args', 'aria-label': 'Command arguments', placeholder: 'arguments' });
    v.commandRun = el('button', { type: 'submit', id: 'command-run', text: 'Run command' });
    api('/api/commands')
      .then((data) => {
        for (const c of data.commands) {
          v.commandSelect.append(el('option', { value: c.name, text: '/' + c.name, title: (c.args ? c.args + ': ' : '') + c.help }));
        }
      })
      .catch((err) => toast(err.message));
    return el(
      'form',
      {
        class: 'command-bar',
        onsubmit: async (event) => {
          event.preventDefault();
          v.commandRun.disabled = true;
          try {
            await post(v, '/commands/' + encodeURIComponent(v.commandSelect.value), { args: v.commandArgs.value });
            v.commandArgs.value = '';
          } catch (err) {
            toast(err.message);
          } finally {
            v.commandRun.disabled = !v.info.writable;
          }
        },
      },
      v.commandSelect,
      v.commandArgs,
      v.commandRun,
    );
  }

  function modeSelect(v, mode, modes) {
    const select = el(
      'select',
      {
        class: 'mode',
        id: 'mode',
        'aria-label': 'Permission mode',
        title: modes.map((m) => m.id + ': ' + m.description).join(' · '),
        onchange: async () => {
          try {
            const done = await post(v, '/mode', { mode: select.value });
            select.value = done.mode;
          } catch (err) {
            toast(err.message);
            select.value = mode;
          }
        },
      },
      ...modes.map((m) => el('option', { value: m.id, text: 'mode: ' + m.id, title: m.description, selected: m.id === mode })),
    );
    return select;
  }

  function setRunning(v, running) {
    const was = v.running;
    v.running = running;
    // A working indicator with the elapsed time, under the streaming text (the terminal's
    // status line); it goes when the turn ends.
    if (running && (!was || !v.working)) {
      if (v.working) v.working.remove();
      const started = Date.now();
      const label = el('span', { class: 'working-text', text: 'working · 0s' });
      v.working = el('div', { class: 'working', id: 'working', role: 'status' }, el('span', { class: 'spinner' }), label);
      v.workingTimer = setInterval(() => {
        label.textContent = 'working · ' + Math.round((Date.now() - started) / 1000) + 's';
      }, 1000);
      v.queueBox.before(v.working);
    } else if (!running && v.working) {
      clearInterval(v.workingTimer);
      v.working.remove();
      v.working = null;
    }
    v.state.textContent = !v.info.writable ? 'read-only' : running ? 'running' : 'idle';
    v.state.className = 'pill ' + (running ? 'state-running' : 'state-idle');
    v.interrupt.disabled = !running;
  }

  async function post(v, suffix, body) {
    return api('/api/sessions/' + encodeURIComponent(v.id) + suffix, { method: 'POST', body: body || {} });
  }

  function addImages(v, files) {
    for (const file of Array.from(files || [])) {
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result || '');
        v.images.push({ name: file.name, data: url.slice(url.indexOf(',') + 1) });
        v.imageNote.textContent = v.images.length + ' image(s) attached';
      };
      reader.readAsDataURL(file);
    }
  }

  async function send(v, event) {
    if (event) event.preventDefault();
    const text = v.input.value;
    if (!text.trim()) return false;
    const body = v.images.length ? { text, images: v.images } : { text };
    if (v.running) {
      // As in the terminal: a message typed during a turn waits for it, shown as queued and
      // cancellable, and is sent when the turn ends.
      enqueue(v, body);
      v.input.value = '';
      v.images = [];
      v.imageNote.textContent = '';
      v.imagePick.value = '';
      return true;
    }
    v.send.disabled = true;
    try {
      await post(v, '/messages', body);
      v.input.value = '';
      v.images = [];
      v.imageNote.textContent = '';
      v.imagePick.value = '';
      return true;
    } catch (err) {
      toast(err.message);
      return false;
    } finally {
      v.send.disabled = !v.info.writable;
    }
  }

  function enqueue(v, body) {
    v.queue = v.queue || [];
    const item = { body };
    item.node = el(
      'div',
      { class: 'msg user queued' },
      el('span', { class: 'role role-user', text: 'you · queued' }),
      el('div', { class: 'text', text: body.text }),
      el('button', {
        type: 'button',
        class: 'cancel-queued',
        text: 'Cancel',
        onclick: () => {
          v.queue = v.queue.filter((q) => q !== item);
          item.node.remove();
        },
      }),
    );
    v.queue.push(item);
    v.queueBox.append(item.node);
  }

  async function runQueue(v) {
    if (v.running || !v.queue || !v.queue.length) return;
    const item = v.queue.shift();
    item.node.remove();
    try {
      setRunning(v, true);
      await post(v, '/messages', item.body);
    } catch (err) {
      setRunning(v, false);
      toast(err.message);
    }
  }

  function connect(v) {
    const source = new EventSource('/api/sessions/' + encodeURIComponent(v.id) + '/events');
    v.source = source;
    source.onopen = () => {
      conn.hidden = false;
      conn.textContent = 'live';
      conn.className = 'pill state-running';
    };
    source.onerror = () => {
      conn.hidden = false;
      if (source.readyState === EventSource.CLOSED) {
        conn.textContent = 'disconnected';
        fetch('/api/me', { credentials: 'same-origin' }).then((r) => {
          if (r.status === 401) showLogin();
        });
      } else {
        conn.textContent = 'reconnecting…';
      }
      conn.className = 'pill state-warn';
    };
    source.onmessage = (message) => {
      const id = Number(message.lastEventId);
      if (id && id <= v.lastId) return; // already shown
      let data;
      try {
        data = JSON.parse(message.data);
      } catch (_) {
        return;
      }
      if (data.kind === 'resync') {
        resetView(v);
        for (const event of data.events) render(v, event);
      } else {
        if (id && id !== v.lastId + 1) v.gap = true;
        render(v, data);
        v.count += 1;
      }
      if (id) v.lastId = id;
      v.root.dataset.lastId = String(v.lastId);
      v.root.dataset.count = String(v.count);
      v.root.dataset.gap = v.gap ? '1' : '0';
    };
  }

  function resetView(v) {
    clear(v.transcript);
    clear(v.approvalList);
    v.approvalCard.hidden = true;
    v.blocks = {};
    v.calls = {};
    v.approvals = {};
    v.costs = {};
    v.requests = [];
    renderCost(v);
  }

  // -- rendering events ------------------------------------------------------------------------

  function scrollDown(v) {
    const nearBottom = window.innerHeight + window.scrollY >= document.body.offsetHeight - 160;
    if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
  }

  function add(v, node) {
    v.transcript.append(node);
    scrollDown(v);
    return node;
  }

  function roleTag(role) {
    return el('span', { class: 'role role-' + role, text: role });
  }

  function note(v, text, kind) {
    add(v, el('div', { class: 'note ' + (kind || '') }, text));
  }

  function endBlocks(v) {
    v.blocks = {};
  }

  function streamInto(v, role, kind, text) {
    let block = v.blocks[role];
    if (!block || block.kind !== kind) {
      let node;
      if (kind === 'reasoning') {
        node = el('pre', { class: 'reasoning-text' });
        add(
          v,
          el('details', { class: 'reasoning' }, el('summary', {}, roleTag(role), ' reasoning'), node),
        );
      } else {
        node = el('div', { class: 'text' });
        add(v, el('div', { class: 'msg assistant by-' + role }, roleTag(role), node));
      }
      block = { kind, node };
      v.blocks[role] = block;
    }
    block.node.append(document.createTextNode(text));
    scrollDown(v);
  }

  // The one place HTML enters the page: the server's rendering of a finished text block,
  // rebuilt there from an allowlist of elements and attributes (reasonix/web/markdown.py).
  // A template's content is inert (no script runs, nothing loads) until it is placed; the
  // CSP forbids inline script and style in any case.
  function showMarkdown(v, role, html) {
    const block = v.blocks[role];
    if (!block || block.kind !== 'text' || typeof html !== 'string') return;
    const template = document.createElement('template');
    template.innerHTML = html;
    block.node.replaceChildren(template.content);
    block.node.classList.add('md');
  }

  function parseArgs(raw) {
    try {
      const value = JSON.parse(raw);
      return value && typeof value === 'object' ? value : {};
    } catch (_) {
      return {};
    }
  }

  function diffView(lines) {
    const pre = el('pre', { class: 'diff' });
    for (const line of lines) {
      let cls = 'ctx';
      if (line.startsWith('+++') || line.startsWith('---')) cls = 'file';
      else if (line.startsWith('@@')) cls = 'hunk';
      else if (line.startsWith('+')) cls = 'add';
      else if (line.startsWith('-')) cls = 'del';
      pre.append(el('span', { class: cls, text: line + '\n' }));
    }
    return pre;
  }

  // The approval's preview when it is a unified diff: the one the terminal shows, built by the
  // edit tool from the file itself, with unchanged context lines around each change.
  function previewDiff(preview) {
    if (typeof preview !== 'string' || !preview) return null;
    const lines = preview.split('\n');
    const hunk = lines.some((l) => l.startsWith('@@'));
    const change = lines.some((l) => /^[+-](?![+-]{2} )/.test(l));
    return hunk && change ? diffView(lines) : null;
  }

  // An edit tool's change read from its arguments' shape (a list of edits, one replacement, or
  // a whole new content). Which tools edit is the tool's own declaration (`tool_kind`, sent by
  // the server with the event), never a list of names here.
  function proposedDiff(kind, args) {
    if (kind !== 'edit') return null;
    const lines = [];
    const side = (prefix, text) => {
      for (const line of String(text || '').split('\n')) lines.push(prefix + line);
    };
    if (Array.isArray(args.edits)) {
      for (const edit of args.edits) {
        side('-', (edit || {}).old_string);
        side('+', (edit || {}).new_string);
      }
    } else if (typeof args.old_string === 'string') {
      side('-', args.old_string);
      side('+', args.new_string);
    } else if (typeof args.content === 'string') {
      side('+', args.content);
    } else {
      return null;
    }
    return diffView(lines);
  }

  function questionsView(v, questions, callId) {
    // The model's `ask` questions. One question with one choice: a click sends the option at
    // once (the next message is delivered to the model as the answer) and closes the card;
    // otherwise a chosen option goes into the message box.
    const box = el('div', { class: 'questions' });
    const oneClick = questions.length === 1 && !questions[0].multiSelect;
    for (const q of questions) {
      const options = el('div', { class: 'options' });
      for (const option of Array.isArray(q.options) ? q.options : []) {
        options.append(
          el(
            'button',
            {
              type: 'button',
              class: 'option',
              title: String(option.description || ''),
              onclick: async () => {
                const label = String(option.label || '');
                if (oneClick) {
                  v.input.value = label;
                  if (await send(v, null)) answered(v, callId, label);
                  return;
                }
                v.input.value = q.multiSelect && v.input.value ? v.input.value + ', ' + label : label;
                v.input.focus();
              },
            },
            el('strong', { text: String(option.label || '') }),
            el('span', { class: 'muted small', text: String(option.description || '') }),
          ),
        );
      }
      box.append(
        el(
          'div',
          { class: 'question' },
          el('span', { class: 'pill', text: String(q.header || 'question') }),
          el('p', { class: 'question-text', text: String(q.question || '') + (q.multiSelect ? ' (pick one or more)' : '') }),
          options,
        ),
      );
    }
    return box;
  }

  function answered(v, callId, label) {
    const entry = v.calls[callId];
    if (!entry) return;
    entry.status.textContent = 'answered: ' + label;
    entry.card.classList.add('ok', 'answered');
    for (const button of entry.body.querySelectorAll('button.option')) button.disabled = true;
    const box = entry.body.querySelector('.questions');
    if (box) box.hidden = true;
  }

  // `event` is the tool_call event: the call, and what its tool declares it is (`tool_kind`)
  // and acts on (`subject`: the path, command, URL... the card shows).
  function toolCall(v, role, event) {
    const call = event.call;
    const args = parseArgs(call.arguments);
    const status = el('span', { class: 'call-status', text: 'running' });
    const body = el('div', { class: 'call-body' });
    const preview = proposedDiff(event.tool_kind, args);
    if (call.name === 'ask' && Array.isArray(args.questions)) body.append(questionsView(v, args.questions, call.id));
    else if (preview) body.append(preview);
    else if (call.arguments && call.arguments !== '{}') {
      body.append(el('details', {}, el('summary', { text: 'arguments' }), el('pre', { text: call.arguments })));
    }
    const card = el(
      'div',
      { class: 'call by-' + role, data: { callId: call.id, tool: call.name } },
      el(
        'div',
        { class: 'call-head' },
        roleTag(role),
        el('code', { class: 'tool', text: call.name }),
        el('span', { class: 'subject', text: String(event.subject || '') }),
        status,
      ),
      body,
    );
    v.calls[call.id] = { card, status, body };
    add(v, card);
  }

  function toolResult(v, event) {
    const entry = v.calls[event.call_id];
    const content = event.content || '';
    const lines = content.split('\n');
    const hasDiff = lines.some((l) => l.startsWith('@@'));
    const output = hasDiff ? diffView(lines) : el('pre', { class: 'output', text: content });
    if (!entry) {
      add(v, el('div', { class: 'call' }, el('code', { text: event.name }), output));
      return;
    }
    if (event.name === 'ask' && !event.is_error) {
      // The questions are on the card already; the result only says they wait for an answer.
      if (!entry.card.classList.contains('answered')) entry.status.textContent = 'waiting for your answer';
      return;
    }
    entry.status.textContent = event.is_error ? 'error' : 'done';
    entry.card.classList.add(event.is_error ? 'failed' : 'ok');
    if (hasDiff) {
      clear(entry.body);
      entry.body.append(output);
    } else {
      const long = lines.length > 12;
      entry.body.append(long ? el('details', {}, el('summary', { text: 'output (' + lines.length + ' lines)' }), output) : output);
    }
  }

  function approvalItem(v, event, isPlan) {
    const reason = el('input', { type: 'text', placeholder: 'Reason (sent to the model with a denial)', 'aria-label': 'Reason for denying' });
    const answer = async (choice) => {
      try {
        await post(v, '/approvals/' + encodeURIComponent(event.id), { choice, reason: reason.value });
      } catch (err) {
        toast(err.message);
      }
    };
    const buttons = el(
      'div',
      { class: 'buttons' },
      el('button', { type: 'button', class: 'primary', text: isPlan ? 'Approve plan' : 'Approve', onclick: () => answer('allow_once') }),
      isPlan ? null : el('button', { type: 'button', text: 'Approve for session', onclick: () => answer('allow_session') }),
      el('button', { type: 'button', class: 'danger', text: 'Deny', onclick: () => answer('deny') }),
    );
    let detail;
    if (isPlan) detail = el('pre', { class: 'plan-md', text: event.markdown });
    else detail = previewDiff(event.preview) ||
      // The arguments' old and new text, when the core sent no diff of the file.
      proposedDiff(event.tool_kind, event.arguments || {}) ||
      // What the call will do, when no file diff shows it (task_apply: the files and the diff).
      (event.preview ? el('pre', { class: 'preview', text: event.preview }) : null) ||
      // A command as the line that will run, not as JSON.
      (event.tool_kind === 'execute' && event.subject
        ? el('pre', { class: 'command-line', text: '$ ' + event.subject })
        : null) ||
      el('pre', { text: JSON.stringify(event.arguments || {}, null, 2) });
    const item = el(
      'div',
      { class: 'approval', data: { approvalId: event.id } },
      el(
        'div',
        { class: 'approval-head' },
        el('strong', { text: isPlan ? 'Run this plan?' : event.tool }),
        isPlan ? null : el('span', { class: 'subject', text: event.subject }),
      ),
      isPlan ? null : el('p', { class: 'muted small', text: event.reason }),
      detail,
      v.info.writable ? reason : null,
      v.info.writable ? buttons : null,
    );
    v.approvals[event.id] = item;
    v.approvalTitles = v.approvalTitles || {};
    v.approvalTitles[event.id] = isPlan ? 'The plan' : (event.tool + ' ' + (event.subject || '')).trim();
    v.approvalList.append(item);
    v.approvalCard.hidden = false;
    window.scrollTo(0, 0);
  }

  function approvalAnswered(v, event) {
    const item = v.approvals[event.id];
    if (item) item.remove();
    delete v.approvals[event.id];
    v.approvalCard.hidden = Object.keys(v.approvals).length === 0;
    const words = {
      allow_once: 'approved',
      allow_session: 'approved for this session',
      deny: 'denied',
      cancelled: 'cancelled (turn interrupted)',
    };
    // What was approved in words; the approval's id only in the tooltip.
    const what = (v.approvalTitles || {})[event.id] || 'The request';
    const shown = el('div', { class: 'note approval-note', title: 'approval ' + event.id },
      what + ': ' + (words[event.choice] || event.choice) + (event.reason ? ' — ' + event.reason : ''));
    add(v, shown);
  }

  function renderPlan(v, plan) {
    clear(v.planBody);
    v.planBody.append(el('p', { class: 'objective', text: plan.objective || '' }));
    if (plan.risks && plan.risks.length) v.planBody.append(el('p', { class: 'muted small', text: 'Risks: ' + plan.risks.join('; ') }));
    if (!v.todoList.childElementCount) {
      for (const step of plan.steps || []) v.todoList.append(todoItem({ content: step.title, status: 'pending' }));
    }
  }

  function todoItem(item) {
    const marks = { completed: '✓', in_progress: '◐', pending: '○', cancelled: '✕' };
    return el(
      'li',
      { class: 'todo-item ' + item.status, data: { status: item.status } },
      el('span', { class: 'tick', 'aria-hidden': 'true', text: marks[item.status] || '○' }),
      el('span', { class: 'todo-text', text: item.content }),
    );
  }

  function renderTodo(v, items) {
    clear(v.todoList);
    for (const item of items) v.todoList.append(todoItem(item));
    if (items.length && v.planBody.querySelector('.muted') && !v.planBody.querySelector('.objective')) {
      clear(v.planBody);
    }
  }

  // A paid tool request (web_search): its own line, named as /cost names it.
  function addCharge(v, event) {
    const source = event.source || event.role;
    const line = source === 'executor' ? event.service : event.service + ':' + source;
    const c = v.costs[line] || { requests: 0, prompt: 0, hit: 0, miss: 0, completion: 0, cost: 0, estimated: 0 };
    c.requests += event.requests || 0;
    c.cost += event.cost || 0;
    v.costs[line] = c;
    renderCost(v);
  }

  function addUsage(v, event) {
    const role = event.source || event.role;
    const u = event.usage || {};
    const c = v.costs[role] || { requests: 0, prompt: 0, hit: 0, miss: 0, completion: 0, cost: 0, estimated: 0 };
    c.requests += 1;
    // An interrupted or broken request whose usage never arrived: counted from what streamed.
    if (event.estimated) c.estimated += 1;
    c.prompt += u.prompt_tokens || 0;
    c.hit += u.cache_hit_tokens || 0;
    c.miss += u.cache_miss_tokens || 0;
    c.completion += u.completion_tokens || 0;
    c.cost += event.cost || 0;
    v.costs[role] = c;
    v.requests.push({ role, hit: u.cache_hit_tokens || 0, miss: u.cache_miss_tokens || 0 });
    renderCost(v);
  }

  function renderCost(v) {
    clear(v.costBody);
    const roles = Object.keys(v.costs).sort();
    if (!roles.length) {
      v.costBody.append(el('p', { class: 'muted', text: 'No requests yet.' }));
      clear(v.chart);
      return;
    }
    const table = el('table', { class: 'cost-table' });
    table.append(
      el('thead', {}, el('tr', {}, ...[
            ['role', ''],
            ['reqs', 'requests'],
            ['in', 'input tokens'],
            ['hit', 'share of input tokens served from the prefix cache'],
            ['out', 'output tokens'],
            ['cost', 'USD'],
          ].map(([h, title]) => el('th', { text: h, title: title || null })))),
    );
    const tbody = el('tbody');
    const total = { requests: 0, prompt: 0, hit: 0, completion: 0, cost: 0 };
    for (const role of roles) {
      const c = v.costs[role];
      for (const k of Object.keys(total)) total[k] += c[k];
      tbody.append(
        el(
          'tr',
          { data: { role } },
          el('td', {}, roleTag(role)),
          el('td', { text: String(c.requests) }),
          el('td', { text: num(c.prompt) }),
          el('td', { class: 'hit', text: pct(c.hit, c.prompt) }),
          el('td', { text: num(c.completion) }),
          el('td', {
            class: 'usd',
            text: usd(c.cost) + (c.estimated ? ' ~' : ''),
            title: c.estimated
              ? 'includes an estimate for ' + c.estimated + ' interrupted or broken request(s): their usage never arrived, so their tokens are counted from what streamed'
              : null,
          }),
        ),
      );
    }
    tbody.append(
      el(
        'tr',
        { class: 'total', data: { role: 'total' } },
        el('td', { text: 'total' }),
        el('td', { text: String(total.requests) }),
        el('td', { text: num(total.prompt) }),
        el('td', { class: 'hit', text: pct(total.hit, total.prompt) }),
        el('td', { text: num(total.completion) }),
        el('td', { class: 'usd', text: usd(total.cost) }),
      ),
    );
    table.append(tbody);
    v.costBody.append(table);
    drawChart(v);
  }

  function drawChart(v) {
    clear(v.chart);
    const reqs = v.requests;
    if (!reqs.length) return;
    const width = 320;
    const height = 96;
    const max = Math.max(...reqs.map((r) => r.hit + r.miss), 1);
    const slot = width / Math.max(reqs.length, 8);
    const bar = Math.max(2, slot * 0.7);
    const chart = svg('svg', {
      viewBox: `0 0 ${width} ${height + 14}`,
      class: 'bars',
      role: 'img',
      'aria-label': 'Input tokens per request: cached (solid) and uncached (pale)',
    });
    reqs.forEach((r, i) => {
      const x = i * slot + (slot - bar) / 2;
      const hitH = (r.hit / max) * height;
      const missH = (r.miss / max) * height;
      const color = r.role === 'planner' ? 'var(--planner)' : r.role === 'executor' ? 'var(--executor)' : 'var(--other)';
      const title = svg('title', {});
      title.textContent = `#${i + 1} ${r.role}: ${num(r.hit)} cached + ${num(r.miss)} uncached input tokens`;
      const group = svg('g', { class: 'req' });
      group.append(title);
      group.append(svg('rect', { x, y: height - hitH, width: bar, height: hitH, fill: color }));
      group.append(svg('rect', { x, y: height - hitH - missH, width: bar, height: missH, fill: color, 'fill-opacity': 0.3 }));
      chart.append(group);
    });
    chart.append(svg('line', { x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5, stroke: 'currentColor', 'stroke-opacity': 0.3 }));
    const label = svg('text', { x: 0, y: height + 12, 'font-size': 10, fill: 'currentColor', 'fill-opacity': 0.6 });
    label.textContent = 'input tokens per request · solid = cache hit';
    chart.append(label);
    const legend = el(
      'div',
      { class: 'legend small muted' },
      el('span', { class: 'swatch executor' }),
      'executor',
      el('span', { class: 'swatch planner' }),
      'planner',
    );
    v.chart.append(chart, legend);
  }

  function render(v, e) {
    const role = e.role || 'controller';
    switch (e.kind) {
      case 'user_message':
      case 'turn_mark':
        endBlocks(v);
        add(v, el('div', { class: 'msg user' }, el('span', { class: 'role role-user', text: 'you' }), el('div', { class: 'text', text: e.text })));
        if (e.kind === 'user_message') setRunning(v, true);
        break;
      case 'turn_started':
        v.blocks[role] = null;
        v.shownText[role] = '';
        if (role === 'planner') {
          v.plannerNote = el('div', { class: 'note planner-note' }, 'The planner is studying the task…');
          add(v, v.plannerNote);
        } else if (v.plannerNote) {
          v.plannerNote.remove();
          v.plannerNote = null;
        }
        break;
      case 'text_delta':
        v.shownText[role] = (v.shownText[role] || '') + e.text;
        streamInto(v, role, 'text', e.text);
        break;
      case 'reasoning_delta':
        streamInto(v, role, 'reasoning', e.text);
        break;
      case 'markdown':
        showMarkdown(v, role, e.html);
        break;
      case 'tool_call':
        v.blocks[role] = null;
        toolCall(v, role, e);
        break;
      case 'tool_result':
        toolResult(v, e);
        break;
      case 'approval_requested':
        if (v.calls && Object.values(v.calls).length) {
          const last = Object.values(v.calls).pop();
          if (last && last.status.textContent === 'running') last.status.textContent = 'waiting for approval';
        }
        approvalItem(v, e, false);
        break;
      case 'plan_approval_requested':
        approvalItem(v, e, true);
        break;
      case 'approval_answered':
        approvalAnswered(v, e);
        break;
      case 'plan_produced':
        if (v.plannerNote) {
          v.plannerNote.remove();
          v.plannerNote = null;
        }
        renderPlan(v, e.plan || {});
        note(v, 'Plan ready: ' + ((e.plan && e.plan.objective) || ''), 'planner-note');
        break;
      case 'todo_changed':
        renderTodo(v, e.items || []);
        break;
      case 'step_completed':
        note(v, 'Step ' + e.step + (e.accepted ? ' completed' : ' not accepted: ' + e.reason), e.accepted ? 'ok-note' : 'warn-note');
        break;
      case 'usage':
        addUsage(v, e);
        break;
      case 'tool_charged':
        addCharge(v, e);
        break;
      case 'gate_decided':
        // The route in plain words (the server's table); its codes in a details view. The
        // everyday route (the executor alone) says nothing.
        if (e.words) {
          add(v, el('details', { class: 'note gate-note' },
            el('summary', {}, e.words),
            el('span', { class: 'muted small', text: 'route ' + e.route + ', reason ' + e.reason }),
          ));
        }
        break;
      case 'turn_ended':
        // A turn that waits for an answer ends with the question's text: the ask card shows it.
        if (role === 'executor' && e.text && e.reason !== 'needs_input' && !(v.shownText[role] || '').trim()) {
          add(v, el('div', { class: 'msg assistant by-executor' }, roleTag('executor'), el('div', { class: 'text', text: e.text })));
        }
        v.blocks[role] = null;
        break;
      case 'turn_outcome':
        endBlocks(v);
        setRunning(v, false);
        setTimeout(() => runQueue(v), 0);
        note(v, 'Turn ' + e.turn + ' ended: ' + (e.interrupted ? 'interrupted' : e.stop_reason), e.stop_reason === 'done' ? 'ok-note' : 'warn-note');
        for (const entry of Object.values(v.calls || {})) {
          // A question outlives its turn: its card waits for the answer, not "running".
          if (entry.card.dataset.tool === 'ask' && entry.status.textContent === 'running') {
            entry.status.textContent = e.stop_reason === 'needs_input' ? 'waiting for your answer' : 'not answered';
          }
        }
        if (e.stop_reason === 'needs_input') {
          note(v, 'The agent asked you something (above): your next message is the answer.', 'planner-note');
        }
        break;
      case 'output_retracted':
        for (const block of Object.values(v.blocks)) if (block) block.node.classList.add('void');
        endBlocks(v);
        note(v, 'The answer broke off and is retried (' + e.reason + ')', 'warn-note');
        break;
      case 'error':
        note(v, 'Error: ' + e.message, 'error-note');
        break;
      case 'review_verdict':
        note(v, 'reviewer: ' + e.decision + ' ' + e.tool + ' ' + e.subject + ' (' + e.reason + ')', 'notice-note');
        break;
      case 'notice':
        if (e.code === 'needs_input') break; // the ask card shows the questions
        note(v, e.message, 'notice-note');
        break;
      case 'command_reply':
        note(v, e.text, 'notice-note');
        break;
      case 'user_shell':
        // The user's own `!command` ended: its output (joining the next message), no request.
        endBlocks(v);
        add(v, el('div', { class: 'msg shell' + (e.refused ? ' refused' : '') },
          el('div', { class: 'shell-command', text: '$ ' + e.command }),
          e.interrupted ? null : el('pre', { class: 'shell-output', text: e.output }),
        ));
        if (e.interrupted) note(v, 'Stopped; nothing joins the next message.', 'warn-note');
        else if (e.queued) note(v, 'The output joins your next message; no request was sent.', 'notice-note');
        setRunning(v, false);
        setTimeout(() => runQueue(v), 0);
        break;
      case 'retry':
        note(v, 'Retrying (' + e.reason + ')', 'warn-note');
        break;
      case 'plan_failed':
        note(v, 'Planning failed: ' + e.reason, 'warn-note');
        break;
      case 'replan_triggered':
        note(v, 'Re-planning: ' + e.reason, 'planner-note');
        break;
      case 'compaction':
        note(v, e.accepted ? `Compacted history: ${e.messages_before} → ${e.messages_after} messages` : 'Compaction skipped: ' + e.reason);
        break;
      case 'job_started':
        note(v, 'Background job ' + e.job_id + ' started: ' + e.command);
        break;
      case 'job_ended':
        note(v, 'Background job ' + e.job_id + ' ' + e.status + (e.exit_code === null || e.exit_code === undefined ? '' : ' (exit ' + e.exit_code + ')'));
        break;
      case 'plan_approval':
        note(v, e.approved ? 'Plan approved' : 'Plan declined' + (e.reason ? ': ' + e.reason : ''));
        break;
      default:
        break;
    }
  }

  boot().catch((err) => {
    clear(main);
    main.append(el('p', { class: 'pad error-text', text: 'Could not start: ' + err.message }));
  });
})();
