/* Rows' passes over what estimate sends (included by _scan.c after Rows' other passes): ``sent``, view_of's pass
 * without its objects, and ``tally``, _heuristic_tally's loop. Each reads the slots of ``FullEntry``s; an index
 * with another entry in it, or a field of an unexpected type where the figures are made, is left to the Python
 * whole (None, before anything is changed); an entry whose other fields are unusual is handed to the Python
 * one at a time, in order. */

static int tally_init(Rows *self, PyObject *full, PyObject *kinds, PyObject *result) {
    static const char *F[] = {"empty", "stop", "chars", "msg_key", "kinds", "tool_chars", "nblocks", "blank_text", "lineno"};
    static const char *K[] = {"text", "thinking", "tool_call", "tool_result", "image", "summary"};
    static const char *R[] = {"id", "name", "idx"};
    static const char *C[] = {"problem", "idx"};
    Py_ssize_t fo[9], ro[3], co[2];
    if (slot_offsets(full, F, 9, fo) < 0 || slot_offsets(kinds, K, 6, self->k_off) < 0
        || slot_offsets(result, R, 3, ro) < 0 || slot_offsets((PyObject *)self->call, C, 2, co) < 0) return -1;
    self->f_nblocks = fo[6]; self->f_blank_text = fo[7]; self->f_lineno = fo[8];
    self->r_id = ro[0]; self->r_name = ro[1]; self->r_idx = ro[2];
    self->c_problem = co[0]; self->c_idx = co[1];
    Py_XSETREF(self->result_cls, (PyTypeObject *)Py_NewRef(result));
    self->f_empty = fo[0]; self->f_stop = fo[1]; self->f_chars = fo[2]; self->f_msg_key = fo[3]; self->f_kinds = fo[4];
    self->f_tool_chars = fo[5];
    const char *words[] = {"user", "toolResult", "compact_summary", "calls", "results", "call_tokens", "result_tokens",
                           "call", "result", "?", "no_content", "bad_blocks", "context", "rename_calls",
                           "rename_results", "reused-id", "rewritten", "content_not_list"};
    PyObject **into[] = {&self->user, &self->tool_result_role, &self->compact_summary, &self->calls_key,
                         &self->results_key, &self->call_tokens, &self->result_tokens, &self->call_word,
                         &self->result_word, &self->no_role, &self->no_content, &self->bad_blocks,
                         &self->context_key, &self->rename_calls, &self->rename_results, &self->reused_id,
                         &self->rewritten, &self->content_not_list};
    for (int k = 0; k < 18; k++) {
        PyObject *w = PyUnicode_InternFromString(words[k]);
        if (!w) return -1;
        Py_XSETREF(*into[k], w);
    }
    for (int k = 0; k < 6; k++) {
        PyObject *w = PyUnicode_InternFromString(K[k]);
        if (!w) return -1;
        Py_XSETREF(self->kind_names[k], w);
    }
    Py_XSETREF(self->kinds_cls, (PyTypeObject *)Py_NewRef(kinds));
    return 0;
}

static int tally_ready(Rows *self) {
    if (self->kinds_cls && self->result_cls && self->full && self->call) return 1;
    PyErr_SetString(PyExc_TypeError, "Rows was not given the Kinds and Result classes");
    return 0;
}

/* a str or None */
static inline int str_or_none(PyObject *o) {
    return o == Py_None || (o && PyUnicode_CheckExact(o));
}

/* whether every item of the tuple ``t`` is a str (the stop reasons of turns that are not sent) */
static int strs_only(PyObject *t) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(t, k))) return 0;
    return 1;
}

/* ``stop in unsent`` for a stop reason that is a str or None and a tuple of strs (``strs_only``) */
static int unsent_stop(PyObject *stop, PyObject *unsent) {
    for (Py_ssize_t j = 0; stop != Py_None && j < PyTuple_GET_SIZE(unsent); j++)
        if (same_str(stop, PyTuple_GET_ITEM(unsent, j))) return 1;
    return 0;
}

/* view.sent_assistant of an assistant entry (its stop a str or None, its extra a dict or None), in its order: 1, 0,
 * or -1 on error */
static int sent_assistant(Rows *self, PyObject *e, PyObject *unsent) {
    if (SLOT(e, self->f_empty) == Py_True) {
        int nc = extra_flag(self, e, self->no_content);
        if (nc <= 0) return nc;
    }
    return !unsent_stop(SLOT(e, self->f_stop), unsent);
}

/* sent(ctx, unsent) -> (vis, messages, unnamed), or None: what ``estimate.view_of(ctx)`` gives, flattened (the
 * entries it keeps, in order) and counted (its messages: runs of one role, assistant or user), without its
 * ViewMessage objects; ``unnamed``: whether a result of a kept entry has no name (``r.name is None``). An
 * assistant entry that is empty (but for Claude Code's marked ``no_content`` in its extra) or stopped for a reason in
 * ``unsent`` (a tuple of str) is not sent (view.sent_assistant). None when an entry is no FullEntry, its role, stop,
 * empty or extra is of another type, or its results are no tuple of Results. */
static PyObject *Rows_sent(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "sent(ctx: list, unsent: tuple)");
        return NULL;
    }
    if (!tally_ready(self)) return NULL;
    PyObject *ctx = args[0], *unsent = args[1];
    if (!strs_only(unsent)) Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(ctx);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(ctx, k);
        if (!Py_IS_TYPE(e, self->full)) Py_RETURN_NONE;
        PyObject *empty = SLOT(e, self->f_empty), *x = SLOT(e, self->f_extra);
        PyObject *results = SLOT(e, self->f_results);
        if (!str_or_none(SLOT(e, self->f_role)) || !str_or_none(SLOT(e, self->f_stop))
            || (empty != Py_True && empty != Py_False) || !results || !PyTuple_CheckExact(results)
            || !x || (x != Py_None && !PyDict_CheckExact(x))) Py_RETURN_NONE;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(results); j++) {
            PyObject *r = PyTuple_GET_ITEM(results, j);
            if (!Py_IS_TYPE(r, self->result_cls) || !SLOT(r, self->r_name)) Py_RETURN_NONE;
        }
    }
    PyObject *vis = PyList_New(0);
    if (!vis) return NULL;
    Py_ssize_t messages = 0;
    int last = -1, unnamed = 0;  /* the last sent entry's role: 0 None, 1 assistant, 2 user (any other) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(ctx); k++) {
        PyObject *e = PyList_GET_ITEM(ctx, k), *role = SLOT(e, self->f_role);
        int r = role == Py_None ? 0 : same_str(role, self->assistant) ? 1 : 2;
        if (r == 1) {
            int sent = sent_assistant(self, e, unsent);
            if (sent < 0) {
                Py_DECREF(vis);
                return NULL;
            }
            if (!sent) continue;
        }
        if (r != last) {
            messages++;
            last = r;
        }
        if (PyList_Append(vis, e) < 0) {
            Py_DECREF(vis);
            return NULL;
        }
        PyObject *results = SLOT(e, self->f_results);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(results) && !unnamed; j++)
            unnamed = SLOT(PyTuple_GET_ITEM(results, j), self->r_name) == Py_None;
    }
    return Py_BuildValue("NnO", vis, messages, unnamed ? Py_True : Py_False);
}

/* d[key] += delta (a new reference to delta is not taken); -1 on error */
static int add_into(PyObject *d, PyObject *key, PyObject *delta) {
    PyObject *old = PyDict_GetItemWithError(d, key);
    if (!old) {
        if (PyErr_Occurred()) return -1;
        PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    PyObject *sum = PyNumber_InPlaceAdd(old, delta);
    if (!sum) return -1;
    int r = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return r;
}

/* d[key] = d.get(key, 0) + delta */
static int add_or_set(PyObject *d, PyObject *key, PyObject *delta) {
    PyObject *old = PyDict_GetItemWithError(d, key);
    if (!old) return PyErr_Occurred() ? -1 : PyDict_SetItem(d, key, delta);
    PyObject *sum = PyNumber_Add(old, delta);
    if (!sum) return -1;
    int r = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return r;
}

/* by_tool's figures of one tool (made as Tally.tool makes them), borrowed */
static PyObject *tool_figures(Rows *self, PyObject *by_tool, PyObject *name) {
    PyObject *d = PyDict_GetItemWithError(by_tool, name);
    if (d || PyErr_Occurred()) return d;
    d = PyDict_New();
    if (!d) return NULL;
    PyObject *zero = PyLong_FromLong(0), *fzero = PyFloat_FromDouble(0.0);
    int bad = !zero || !fzero || PyDict_SetItem(d, self->calls_key, zero) < 0 || PyDict_SetItem(d, self->results_key, zero) < 0
              || PyDict_SetItem(d, self->call_tokens, fzero) < 0 || PyDict_SetItem(d, self->result_tokens, fzero) < 0
              || PyDict_SetItem(by_tool, name, d) < 0;
    Py_XDECREF(zero);
    Py_XDECREF(fzero);
    Py_DECREF(d);
    return bad ? NULL : d;  /* (by_tool holds it) */
}

/* d["calls"|"results"] += 1 and d[tokens] += chars / 4, for the tool ``name`` */
static int tool_add(Rows *self, PyObject *by_tool, PyObject *name, PyObject *count, PyObject *tokens, PyObject *chars) {
    PyObject *d = tool_figures(self, by_tool, name);
    if (!d) return -1;
    PyObject *one = PyLong_FromLong(1), *four = PyLong_FromLong(4);
    PyObject *q = one && four ? PyNumber_TrueDivide(chars, four) : NULL;
    int r = q && add_into(d, count, one) == 0 && add_into(d, tokens, q) == 0 ? 0 : -1;
    Py_XDECREF(one);
    Py_XDECREF(four);
    Py_XDECREF(q);
    return r;
}

#define FLOAT_EXACT (1LL << 53)

/* an exact int below 2**53 (what a float holds exactly); -1 when it is not one */
static inline long long small_int(PyObject *o) {
    if (!o || !PyLong_CheckExact(o)) return -1;
#if PY_VERSION_HEX < 0x030C0000  /* (3.11: a digit or none, read in place) */
    Py_ssize_t size = Py_SIZE(o);
    if (size == 0) return 0;
    if (size == 1) return (long long)((PyLongObject *)o)->ob_digit[0];
    if (size == -1) return -2;
#endif
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    if (overflow || v >= FLOAT_EXACT || v <= -FLOAT_EXACT) return -1;
    return v < 0 ? -2 : v;  /* (-2: negative, which counts as 0 where it is read) */
}

/* whether the entry's fields are the usual ones here (else ``one(e, n)`` reads it): an extra that is None or a
 * dict without a truthy compact_summary, kinds a Kinds of exact ints (or an empty dict), calls and results tuples,
 * tool_chars a dict, the first call a Call; -1 on error */
static int usual(Rows *self, PyObject *e, long long kv[6]) {
    PyObject *x = SLOT(e, self->f_extra), *kinds = SLOT(e, self->f_kinds), *calls = SLOT(e, self->f_calls);
    PyObject *results = SLOT(e, self->f_results), *tc = SLOT(e, self->f_tool_chars);
    if (!x || !kinds || !calls || !results || !tc || !SLOT(e, self->f_index)) return 0;
    if (x != Py_None) {
        if (!PyDict_CheckExact(x)) return 0;
        PyObject *cs = PyDict_GetItemWithError(x, self->compact_summary);
        if (!cs && PyErr_Occurred()) return -1;
        if (cs) {
            int t = PyObject_IsTrue(cs);
            if (t) return t < 0 ? -1 : 0;
        }
    }
    if (!PyTuple_CheckExact(calls) || !PyTuple_CheckExact(results) || !PyDict_Check(tc)) return 0;
    if (PyTuple_GET_SIZE(calls)) {
        PyObject *c = PyTuple_GET_ITEM(calls, 0);
        if (!Py_IS_TYPE(c, self->call) || !SLOT(c, self->c_name)) return 0;
    }
    if (!PyDict_CheckExact(tc) && PyDict_GET_SIZE(tc)) return 0;
    if (Py_IS_TYPE(kinds, self->kinds_cls)) {
        for (int k = 0; k < 6; k++) {
            PyObject *v = SLOT(kinds, self->k_off[k]);
            long long n = small_int(v);
            if (n < 0) return 0;  /* (a negative count too: Python's sums take it as it is) */
            kv[k] = n;
        }
        return 1;
    }
    if (PyDict_Check(kinds) && PyDict_GET_SIZE(kinds) == 0) {
        for (int k = 0; k < 6; k++) kv[k] = 0;
        return 1;
    }
    return 0;
}

/* ``names.get(key) or "unknown"`` (borrowed; NULL on error) */
static PyObject *name_or_unknown(Rows *self, PyObject *names, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(names, key);
    if (!v) return PyErr_Occurred() ? NULL : self->unknown;
    int t = PyObject_IsTrue(v);
    return t < 0 ? NULL : t ? v : self->unknown;
}

/* ``x or "unknown"`` (borrowed; NULL on error) */
static PyObject *or_unknown(Rows *self, PyObject *x) {
    int t = PyObject_IsTrue(x);
    return t < 0 ? NULL : t ? x : self->unknown;
}

/* whether heuristic_tools's way with the entry's tools is read here (else ``tools(e)`` reads it): split parts, when
 * there are, a list of (``"call"`` or ``"result"``, key, chars) with chars an int below 2**53; a first result
 * that is a Result when its characters are the entry's (no tool_chars). -1 on error */
static int tools_usual(Rows *self, PyObject *e, PyObject *parts) {
    if (parts) {
        if (!PyList_CheckExact(parts)) return 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *t = PyList_GET_ITEM(parts, j);
            if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3 || small_int(PyTuple_GET_ITEM(t, 2)) < 0) return 0;
            PyObject *which = PyTuple_GET_ITEM(t, 0);
            if (!same_str(which, self->call_word) && !same_str(which, self->result_word)) return 0;
        }
    }
    PyObject *results = SLOT(e, self->f_results);
    if (PyTuple_GET_SIZE(results)) {
        PyObject *r = PyTuple_GET_ITEM(results, 0);
        if (!Py_IS_TYPE(r, self->result_cls) || !SLOT(r, self->r_id) || !SLOT(r, self->r_name)) return 0;
    }
    return 1;
}

/* heuristic_tools(e, split, names) and Tally.tool for each, in order: the split parts (a call's by its name, a result's
 * by its call's name in ``names``), then the first call unless calls were split, then the results unless they
 * were split (pi's tool_chars by tool name; else the first result's name, or its call's, and the entry's result
 * and image characters). ``tools_usual`` said yes. */
static int entry_tools(Rows *self, PyObject *e, const long long kv[6], PyObject *parts, PyObject *names,
                       PyObject *by_tool) {
    int multi_calls = 0, multi_results = 0;
    for (Py_ssize_t j = 0; parts && j < PyList_GET_SIZE(parts); j++) {
        PyObject *t = PyList_GET_ITEM(parts, j), *key = PyTuple_GET_ITEM(t, 1), *chars = PyTuple_GET_ITEM(t, 2);
        int r;
        if (same_str(PyTuple_GET_ITEM(t, 0), self->call_word)) {
            multi_calls = 1;
            r = tool_add(self, by_tool, key, self->calls_key, self->call_tokens, chars);
        } else {
            multi_results = 1;
            PyObject *name = name_or_unknown(self, names, key);
            r = name ? tool_add(self, by_tool, name, self->results_key, self->result_tokens, chars) : -1;
        }
        if (r < 0) return -1;
    }
    PyObject *calls = SLOT(e, self->f_calls), *results = SLOT(e, self->f_results);
    if (PyTuple_GET_SIZE(calls) && !multi_calls) {
        PyObject *name = or_unknown(self, SLOT(PyTuple_GET_ITEM(calls, 0), self->c_name));
        PyObject *chars = name ? PyLong_FromLongLong(kv[2]) : NULL;
        if (!chars) return -1;
        int r = tool_add(self, by_tool, name, self->calls_key, self->call_tokens, chars);
        Py_DECREF(chars);
        if (r < 0) return -1;
    }
    if (!PyTuple_GET_SIZE(results) || multi_results) return 0;
    PyObject *tc = SLOT(e, self->f_tool_chars);
    if (PyDict_GET_SIZE(tc)) {
        PyObject *items = PyDict_Items(tc);  /* (a copy: tool_add may run Python that changes tc) */
        if (!items) return -1;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(items); j++) {
            PyObject *it = PyList_GET_ITEM(items, j);
            if (tool_add(self, by_tool, PyTuple_GET_ITEM(it, 0), self->results_key, self->result_tokens,
                         PyTuple_GET_ITEM(it, 1)) < 0) {
                Py_DECREF(items);
                return -1;
            }
        }
        Py_DECREF(items);
        return 0;
    }
    PyObject *r0 = PyTuple_GET_ITEM(results, 0), *name = SLOT(r0, self->r_name);
    int t = PyObject_IsTrue(name);
    if (t < 0) return -1;
    name = t ? name : name_or_unknown(self, names, SLOT(r0, self->r_id));
    PyObject *chars = name ? PyLong_FromLongLong(kv[3] + kv[4]) : NULL;
    if (!chars) return -1;
    int r = tool_add(self, by_tool, name, self->results_key, self->result_tokens, chars);
    Py_DECREF(chars);
    return r;
}

/* kind_chars[k] += the characters summed by kind so far (those not 0), and the sums back to 0 */
static int add_sums(Rows *self, PyObject *kind_chars, long long sums[6]) {
    for (int j = 0; j < 6; j++) {
        if (!sums[j]) continue;
        PyObject *v = PyLong_FromLongLong(sums[j]);
        int r = v ? add_or_set(kind_chars, self->kind_names[j], v) : -1;
        Py_XDECREF(v);
        if (r < 0) return -1;
        sums[j] = 0;
    }
    return 0;
}

/* whether every value of the dict ``d`` is an int (ints add the same in any order) */
static int ints_only(PyObject *d) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v))
        if (!PyLong_CheckExact(v)) return 0;
    return 1;
}

static inline long long ceil4(long long c) {
    return c > 0 ? (c + 3) / 4 : 0;
}

/* tally(vis, split, names, by_role, by_tool, kind_chars, one, tools) -> (toks, total), or None: _heuristic_tally's
 * loop. ``toks`` are heuristic_per_entry's figures (one ceil(chars / 4) per message, the lines of a split Claude Code
 * response sharing theirs), ``total`` their sum. For each entry, in order, it adds to ``by_role`` (by role_label: a result the
 * user sends counts as "toolResult", an entry without a role as "?"), sums characters by kind (added to ``kind_chars`` at the end), and adds its
 * tools to ``by_tool`` as heuristic_tools and Tally.tool do (``entry_tools``). An entry whose fields it does not
 * expect (``usual``) is handed to ``one(e, n)`` whole, one whose tools it does not (``tools_usual``) to ``tools(e)``
 * for them. None (nothing changed) when an entry is no FullEntry, or its chars, role or msg_key is of another type. */
static PyObject *Rows_tally(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyList_Check(args[0]) || !PyDict_Check(args[1]) || !PyDict_Check(args[2])
        || !PyDict_Check(args[3]) || !PyDict_Check(args[4]) || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "tally(vis: list, split: dict, names: dict, by_role: dict, by_tool: dict, kind_chars: dict, one, tools)");
        return NULL;
    }
    if (!tally_ready(self)) return NULL;
    PyObject *vis = args[0], *split = args[1], *names = args[2], *by_role = args[3], *by_tool = args[4];
    PyObject *kind_chars = args[5], *one = args[6], *tools = args[7];
    Py_ssize_t n = PyList_GET_SIZE(vis);
    long long all = 0, *cs = PyMem_Malloc((n ? n : 1) * sizeof(long long));  /* each entry's chars (0 when < 0) */
    if (!cs) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(vis, k);
        long long c = Py_IS_TYPE(e, self->full) ? small_int(SLOT(e, self->f_chars)) : -1;
        /* (a group's sum must stay exact as a float in the Python) */
        if (c == -1 || !str_or_none(SLOT(e, self->f_role)) || !str_or_none(SLOT(e, self->f_msg_key))
            || (all += (cs[k] = c > 0 ? c : 0)) >= FLOAT_EXACT) {
            PyMem_Free(cs);
            Py_RETURN_NONE;
        }
    }
    PyObject *toks = PyList_New(n);
    if (!toks) {
        PyMem_Free(cs);
        return NULL;
    }
    long long total = 0, sums[6] = {0, 0, 0, 0, 0, 0}, group = 0;
    int direct = 0;  /* kind_chars holds a value that is no int: each entry's characters are added to it as it comes */
    PyObject *key = NULL;  /* the msg_key of the response being counted (borrowed from the list's entries) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(vis) && k < n; k++) {
        PyObject *e = PyList_GET_ITEM(vis, k), *role = SLOT(e, self->f_role);
        long long c = cs[k], tok;
        PyObject *mk = same_str(role, self->assistant) ? SLOT(e, self->f_msg_key) : Py_None;
        if (mk != Py_None && key && same_str(mk, key)) {
            long long before = group;
            group += c;
            tok = ceil4(group) - ceil4(before);
        } else {
            key = mk == Py_None ? NULL : mk;
            group = c;
            tok = ceil4(c);
        }
        total += tok;
        PyObject *nobj = PyLong_FromLongLong(tok);
        if (!nobj) goto fail;
        PyList_SET_ITEM(toks, k, nobj);
        long long kv[6];
        int u = usual(self, e, kv);
        if (u < 0) goto fail;
        if (!u) {  /* the Python adds to kind_chars: what is summed goes in first */
            if (add_sums(self, kind_chars, sums) < 0) goto fail;
            PyObject *r = PyObject_CallFunctionObjArgs(one, e, nobj, NULL);
            if (!r) goto fail;
            Py_DECREF(r);
            if (!direct) {  /* a value that is no int (floats add in order): each entry's characters as it comes */
                direct = !ints_only(kind_chars);
            }
            continue;
        }
        PyObject *calls = SLOT(e, self->f_calls), *results = SLOT(e, self->f_results);
        PyObject *label = role;
        if (PyTuple_GET_SIZE(results) && same_str(role, self->user)) label = self->tool_result_role;
        else if (role == Py_None || PyUnicode_GET_LENGTH(role) == 0) label = self->no_role;  /* (role_label's) */
        for (int j = 0; j < 6; j++) {
            if (sums[j] > LLONG_MAX - kv[j] && add_sums(self, kind_chars, sums) < 0) goto fail;  /* (before an overflow) */
            sums[j] += kv[j];
        }
        if (direct && add_sums(self, kind_chars, sums) < 0) goto fail;
        if (add_or_set(by_role, label, nobj) < 0) goto fail;
        if (!PyTuple_GET_SIZE(calls) && !PyTuple_GET_SIZE(results)) continue;
        PyObject *parts = PyDict_GetItemWithError(split, SLOT(e, self->f_index));
        if (!parts && PyErr_Occurred()) goto fail;
        if (parts == Py_None) parts = NULL;  /* (split.get(e.index) is not None) */
        int ok = tools_usual(self, e, parts);
        if (ok < 0) goto fail;
        if (!ok) {
            PyObject *r = PyObject_CallOneArg(tools, e);
            if (!r) goto fail;
            Py_DECREF(r);
            continue;
        }
        if (entry_tools(self, e, kv, parts, names, by_tool) < 0) goto fail;
    }
    if (PyList_GET_SIZE(vis) != n) {
        PyErr_SetString(PyExc_RuntimeError, "the list changed while it was tallied");
        goto fail;
    }
    if (add_sums(self, kind_chars, sums) < 0) goto fail;
    PyMem_Free(cs);
    return Py_BuildValue("NL", toks, total);
fail:
    PyMem_Free(cs);
    Py_DECREF(toks);
    return NULL;
}

/* view.linear over ``body`` (a list of known entries whose ids and parents are strs or None): 1, 0, -1 on error */
static int linear_of(Rows *self, PyObject *body) {
    Py_ssize_t n = PyList_GET_SIZE(body);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *id = SLOT(PyList_GET_ITEM(body, k), self->e_id);
        if (id == Py_None) return 0;
        if (k + 1 < n) {
            PyObject *p = SLOT(PyList_GET_ITEM(body, k + 1), self->e_parent);
            if (p != id && (p == Py_None || !same_str(p, id))) return 0;
        }
    }
    PyObject *ids = PySet_New(NULL);
    if (!ids) return -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (PySet_Add(ids, SLOT(PyList_GET_ITEM(body, k), self->e_id)) < 0) {
            Py_DECREF(ids);
            return -1;
        }
    }
    int ok = PySet_GET_SIZE(ids) == n;
    PyObject *first = n ? SLOT(PyList_GET_ITEM(body, 0), self->e_parent) : Py_None;
    if (ok && first != Py_None) {
        int r = PySet_Contains(ids, first);
        if (r < 0) { Py_DECREF(ids); return -1; }
        ok = !r;
    }
    Py_DECREF(ids);
    return ok;
}

/* linear(body) -> bool, or None: view.linear, whether every entry's parent is the entry just before it, no id is None,
 * the ids are distinct and the first parent is none of them. None when ``body`` is empty, an entry is of another class,
 * or an id or parent is neither a str nor None. */
static PyObject *Rows_linear(Rows *self, PyObject *body) {
    if (!PyList_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "linear(body: list)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(body);
    if (!n) Py_RETURN_NONE;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(body, k);
        if (!known(self, e) || !str_or_none(SLOT(e, self->e_id)) || !str_or_none(SLOT(e, self->e_parent))) Py_RETURN_NONE;
    }
    int r = linear_of(self, body);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

/* pi_path(entries, header) -> the entries from the root to the leaf, or None: view.pi_path's walk for a file that
 * is not read as version 1 (the caller asks). The entries but those of kind ``header`` are the body; with no header
 * and no id among them, or linked as one chain in file order (``linear_of``), the body is the path; else the leaf (the body's last entry) and each
 * entry's parent, looked up by id (a later entry of an id wins, as in pi's Map), up to an entry with no parent or
 * whose parent is no id. None when an entry is of another class, its kind, id or parent of another type, or the
 * links form a cycle (the Python finds where it closes). */
static PyObject *Rows_pi_path(Rows *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyList_Check(args[0]) || !PyUnicode_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pi_path(entries: list, header: str)");
        return NULL;
    }
    PyObject *entries = args[0], *header = args[1];
    Py_ssize_t n = PyList_GET_SIZE(entries);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(entries, k);
        if (!known(self, e)) Py_RETURN_NONE;
        PyObject *kind = SLOT(e, self->e_kind), *id = SLOT(e, self->e_id), *parent = SLOT(e, self->e_parent);
        if (!kind || !PyUnicode_CheckExact(kind) || !str_or_none(id) || !str_or_none(parent)) Py_RETURN_NONE;
    }
    PyObject *body = PyList_New(0), *by_id = NULL, *path = NULL;
    if (!body) return NULL;
    int ids = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(entries, k);
        if (same_str(SLOT(e, self->e_kind), header)) continue;
        if (PyList_Append(body, e) < 0) goto fail;
        ids |= SLOT(e, self->e_id) != Py_None;
    }
    Py_ssize_t size = PyList_GET_SIZE(body);
    if (!size || (!ids && size == n)) return body;  /* (no header and no id: a linear list, in file order) */
    int lin = linear_of(self, body);  /* (one chain in file order: the whole body, found without a map) */
    if (lin) {
        if (lin < 0) goto fail;
        return body;
    }
    by_id = PyDict_New();
    path = PyList_New(0);
    if (!by_id || !path) goto fail;
    for (Py_ssize_t k = 0; k < size; k++) {
        PyObject *e = PyList_GET_ITEM(body, k), *id = SLOT(e, self->e_id);
        if (id != Py_None && PyDict_SetItem(by_id, id, e) < 0) goto fail;
    }
    PyObject *cur = PyList_GET_ITEM(body, size - 1);
    while (cur) {
        if (PyList_Append(path, cur) < 0) goto fail;
        if (PyList_GET_SIZE(path) > size) {  /* longer than the file: a cycle */
            Py_DECREF(body);
            Py_DECREF(by_id);
            Py_DECREF(path);
            Py_RETURN_NONE;
        }
        PyObject *p = SLOT(cur, self->e_parent);
        if (p == Py_None) break;
        cur = PyDict_GetItemWithError(by_id, p);
        if (!cur && PyErr_Occurred()) goto fail;
    }
    if (PyList_Reverse(path) < 0) goto fail;
    Py_DECREF(body);
    Py_DECREF(by_id);
    return path;
fail:
    Py_XDECREF(body);
    Py_XDECREF(by_id);
    Py_XDECREF(path);
    return NULL;
}

