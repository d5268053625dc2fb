/* profile's per-message accounting (included by _scan.c): ``Profile.message(prof, e, models, ev, ev_main)`` does
 * what ``profile_session``'s ``on_entry`` does with a pi or Claude Code message line that has no flags
 * (``e.extra is None``) or only an attachment's: the model count, ``Evidence.add``, and ``SessionProfiler._message`` with its ``_assistant``,
 * ``_pairs`` and ``_add``; and with a metadata line whose flags say a model or a context window (pi's custom and
 * model_change lines): the model count and ``Evidence.add`` (``window._meta_values``).
 *
 * It takes only what it is sure of: a pi or Claude Code profiler, a ``FullEntry`` of role user, assistant or (pi)
 * toolResult whose fields are of the types the scan gives them (a time that is a float or None, counts that are ints
 * below 2**50, calls, results, kinds and usage of the model's classes), and a profiler whose counters are such ints
 * too. Everything else (and every entry of another format) gets False before anything is changed, and the Python
 * does it, as always.
 * The sums kept in the profiler's maps are added as Python adds them (``PyNumber_Add``), whatever they hold.
 * tests/test_profile_native.py compares the two on every fixture, on generated sessions and on odd entries. */

/* the profiler's counters (``SessionProfiler``'s int slots), in PROF_INTS order */
enum { P_MESSAGES, P_USER_TURNS, P_ASSISTANT_TURNS, P_CALLS, P_API_MESSAGES, P_IDLE_GAPS, P_PERIOD_CALLS,
       P_BURST_CALLS, P_BURSTS, P_PERIODS, P_TS_MESSAGES, P_SINCE_CHARS, P_RESPONSE_CHARS, P_CHARS_AFTER, NPINTS };
static const char *PROF_INTS[NPINTS] = {"messages", "user_turns", "assistant_turns", "calls", "api_messages", "idle_gaps",
                                        "period_calls", "burst_calls", "bursts", "periods", "ts_messages", "since_chars",
                                        "response_chars", "chars_after_response"};
/* its other slots */
enum { P_FMT, P_SESSION, P_CUR, P_KINDS, P_TOOLS, P_RECORDS, P_PENDING, P_API_ROLE, P_FIRST_TS, P_LAST_TS, P_PREV_TS,
       P_GAPS, P_IDLE_TIME, P_BASELINE, P_POINTS, P_RECORDED, P_LAST_KEY, P_ANCHOR, P_LAST_USAGE, P_MAIN, P_PREV_ROLE,
       NPOBJS };
static const char *PROF_OBJS[NPOBJS] = {"fmt", "session", "cur", "kinds", "tools", "records", "pending", "api_role",
                                        "first_ts", "last_ts", "prev_ts", "gaps", "idle_time", "baseline", "points",
                                        "recorded", "last_key", "anchor", "last_usage", "main", "prev_role"};
/* the entry's slots read here */
enum { E_KIND, E_EXTRA, E_ROLE, E_MODEL, E_TS, E_CHARS, E_RESULTS, E_CALLS, E_KINDS, E_USAGE, E_EMPTY, E_STOP,
       E_TOOL_CHARS, E_MSG_KEY, E_ID, E_INDEX, E_LINENO, NESLOTS };
static const char *PE_SLOTS[NESLOTS] = {"kind", "extra", "role", "model", "ts", "chars", "results", "calls", "kinds",
                                        "usage", "empty", "stop", "tool_chars", "msg_key", "id", "index", "lineno"};
static const char *PU_SLOTS[5] = {"input", "output", "cache_read", "cache_write", "placeholder"};
static const char *PW_SLOTS[3] = {"n", "mean", "m2"};
static const char *PK_SLOTS[6] = {"text", "thinking", "tool_call", "tool_result", "image", "summary"};

#define P_LIMIT (1LL << 50)  /* counts beyond this are left to the Python (no sum here can overflow) */
#define P_IDLE_GAP 600.0     /* profile.IDLE_GAP_MIN minutes */
#define P_BURST_MIN 5        /* profile.BURST_MIN_CALLS */
#define P_NAMES_CAP 256      /* "tool:" + name strings kept for reuse */

/* the strings this compares with and writes: (field, text) */
#define P_WORDS(X) X(w_pi, "pi") X(w_claude, "claude") X(w_message, "message") X(w_meta, "meta") X(w_user, "user") \
    X(w_assistant, "assistant") X(w_tool_result, "toolResult") X(w_other, "other") X(w_unknown, "unknown") \
    X(w_tool, "tool:") X(w_append, "append") X(w_add, "add") X(w_attachment, "attachment") X(w_context, "context") \
    X(w_ignored, "ignored") X(w_custom_type, "custom_type") X(w_openclaw, "openclaw.") X(w_recorded, "recorded") \
    X(w_recorded_line, "recorded_line") X(w_model_hint, "model_hint")
#define P_FIELD(f, text) PyObject *f;

static PyTypeObject RowsType;

typedef struct {
    PyObject_HEAD
    PyTypeObject *prof, *welford, *main, *full, *kinds, *call, *result, *usage;
    Rows *rows;                /* the index passes' (scanloop.index_passes): Evidence.add of an assistant, add_assistant */
    PyObject *empty, *unsent;  /* model.EMPTY, view.UNSENT_STOPS */
    Py_ssize_t cap;            /* SessionProfiler.PENDING_CAP */
    Py_ssize_t pi[NPINTS], po[NPOBJS], eo[NESLOTS], uo[5], wo[3], ko[6], co[2], ro[3], main_seen;
    P_WORDS(P_FIELD)
    PyObject *zero, *one;
    PyObject *kind_names[6];
    PyObject *names;           /* tool name -> "tool:" + name */
    long long taken;           /* messages done here (the tests read it) */
} Profile;

static void Profile_dealloc(Profile *self) {
    PyTypeObject **cls[] = {&self->prof, &self->welford, &self->main, &self->full, &self->kinds, &self->call,
                            &self->result, &self->usage};
    for (size_t k = 0; k < sizeof cls / sizeof *cls; k++) Py_XDECREF(*cls[k]);
    Py_XDECREF(self->rows);
#define P_FREE(f, text) Py_XDECREF(self->f);
    P_WORDS(P_FREE)
#undef P_FREE
    PyObject **more[] = {&self->empty, &self->unsent, &self->zero, &self->one, &self->names};
    for (size_t k = 0; k < sizeof more / sizeof *more; k++) Py_XDECREF(*more[k]);
    for (int k = 0; k < 6; k++) Py_XDECREF(self->kind_names[k]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Profile_init(Profile *self, PyObject *args, PyObject *kw) {
    PyObject *cls[8], *rows, *empty, *unsent;
    Py_ssize_t cap;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!OO!n", &PyType_Type, &cls[0], &PyType_Type, &cls[1], &PyType_Type,
                          &cls[2], &PyType_Type, &cls[3], &PyType_Type, &cls[4], &PyType_Type, &cls[5], &PyType_Type,
                          &cls[6], &PyType_Type, &cls[7], &RowsType, &rows, &empty, &PyTuple_Type, &unsent, &cap))
        return -1;
    static const char *MS[] = {"seen"}, *CS[] = {"id", "name"}, *RS[] = {"id", "name", "chars"};
    Py_ssize_t mo[1];
    if (slot_offsets(cls[0], PROF_INTS, NPINTS, self->pi) < 0 || slot_offsets(cls[0], PROF_OBJS, NPOBJS, self->po) < 0
        || slot_offsets(cls[1], PW_SLOTS, 3, self->wo) < 0 || slot_offsets(cls[2], MS, 1, mo) < 0
        || slot_offsets(cls[3], PE_SLOTS, NESLOTS, self->eo) < 0 || slot_offsets(cls[4], PK_SLOTS, 6, self->ko) < 0
        || slot_offsets(cls[5], CS, 2, self->co) < 0 || slot_offsets(cls[6], RS, 3, self->ro) < 0
        || slot_offsets(cls[7], PU_SLOTS, 5, self->uo) < 0)
        return -1;
    if (!strs_only(unsent)) {
        PyErr_SetString(PyExc_TypeError, "Profile: the unsent stop reasons are strs");
        return -1;
    }
    if ((PyTypeObject *)cls[3] != ((Rows *)rows)->full) {
        PyErr_SetString(PyExc_TypeError, "Profile: the index passes read another entry class");
        return -1;
    }
    self->main_seen = mo[0];
    self->cap = cap;
    PyTypeObject **into[] = {&self->prof, &self->welford, &self->main, &self->full, &self->kinds, &self->call,
                             &self->result, &self->usage};
    for (int k = 0; k < 8; k++) Py_XSETREF(*into[k], (PyTypeObject *)Py_NewRef(cls[k]));
    Py_XSETREF(self->rows, (Rows *)Py_NewRef(rows));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    Py_XSETREF(self->unsent, Py_NewRef(unsent));
#define P_INIT(f, text) if (!self->f && !(self->f = PyUnicode_InternFromString(text))) return -1;
    P_WORDS(P_INIT)
#undef P_INIT
    for (int k = 0; k < 6; k++)
        if (!self->kind_names[k] && !(self->kind_names[k] = PyUnicode_InternFromString(PK_SLOTS[k]))) return -1;
    if ((!self->zero && !(self->zero = PyLong_FromLong(0))) || (!self->one && !(self->one = PyLong_FromLong(1)))
        || (!self->names && !(self->names = PyDict_New())))
        return -1;
    return 0;
}

/* an exact int in (-P_LIMIT, P_LIMIT) into *out: 1, or 0 */
static int p_small(PyObject *o, long long *out) {
    if (!o || !PyLong_CheckExact(o)) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || v <= -P_LIMIT || v >= P_LIMIT) return 0;
    *out = v;
    return 1;
}

/* a float or None (*has 0) into *out: 1, or 0 */
static int p_time(PyObject *o, double *out, int *has) {
    if (o == Py_None) {
        *has = 0;
        return 1;
    }
    if (!o || !PyFloat_CheckExact(o)) return 0;
    *has = 1;
    *out = PyFloat_AS_DOUBLE(o);
    return 1;
}

/* math.ceil(n / 4), as the Python computes it for |n| < 2**50 */
static inline long long p_quarter(long long n) {
    return n >= 0 ? (n + 3) / 4 : -((-n) / 4);
}

/* d[key] = d.get(key, 0) + n (-1 on error) */
static int p_add(Profile *self, PyObject *d, PyObject *key, PyObject *n) {
    PyObject *old = PyDict_GetItemWithError(d, key);
    if (!old && PyErr_Occurred()) return -1;
    PyObject *sum = PyNumber_Add(old ? old : self->zero, n);
    if (!sum) return -1;
    int r = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return r;
}

/* tools.setdefault(name, [0, 0])[k] += n (-1 on error) */
static int p_tool(Profile *self, PyObject *tools, PyObject *name, Py_ssize_t k, PyObject *n) {
    PyObject *row = PyDict_GetItemWithError(tools, name);
    if (!row) {
        if (PyErr_Occurred()) return -1;
        if (!(row = PyList_New(2))) return -1;
        PyList_SET_ITEM(row, 0, Py_NewRef(self->zero));
        PyList_SET_ITEM(row, 1, Py_NewRef(self->zero));
        int r = PyDict_SetItem(tools, name, row);
        Py_DECREF(row);  /* (the dict holds it) */
        if (r < 0) return -1;
    }
    Py_INCREF(row);
    PyObject *idx = PyLong_FromSsize_t(k), *old = idx ? PyObject_GetItem(row, idx) : NULL;
    PyObject *sum = old ? PyNumber_InPlaceAdd(old, n) : NULL;
    int r = sum ? PyObject_SetItem(row, idx, sum) : -1;
    Py_XDECREF(sum);
    Py_XDECREF(old);
    Py_XDECREF(idx);
    Py_DECREF(row);
    return r;
}

/* "tool:" + name (new reference), one str per name */
static PyObject *p_category(Profile *self, PyObject *name) {
    PyObject *cat = PyDict_GetItemWithError(self->names, name);
    if (cat) return Py_NewRef(cat);
    if (PyErr_Occurred() || !(cat = PyUnicode_Concat(self->w_tool, name))) return NULL;
    if (PyDict_GET_SIZE(self->names) < P_NAMES_CAP && PyDict_SetItem(self->names, name, cat) < 0) {
        Py_DECREF(cat);
        return NULL;
    }
    return cat;
}

/* pending.pop(key, None) (a new reference, or NULL: none or an error) */
static PyObject *p_pop(PyObject *pending, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(pending, key);
    if (!v) return NULL;
    Py_INCREF(v);
    if (PyDict_DelItem(pending, key) < 0) Py_CLEAR(v);
    return v;
}

/* the results of an entry: a tuple of Results with str or None ids and names and small chars (1), or 0 */
static int p_results_ok(Profile *self, PyObject *rs) {
    if (!rs || !PyTuple_CheckExact(rs)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(rs); k++) {
        PyObject *r = PyTuple_GET_ITEM(rs, k);
        long long n;
        if (!Py_IS_TYPE(r, self->result) || !str_or_none(SLOT(r, self->ro[0])) || !str_or_none(SLOT(r, self->ro[1]))
            || !p_small(SLOT(r, self->ro[2]), &n))
            return 0;
    }
    return 1;
}

/* append a (category, n) pair to ``out`` (a list; new references taken from ``cat``) */
static int p_pair(PyObject *out, PyObject *cat, PyObject *n) {
    PyObject *p = PyTuple_Pack(2, cat, n);
    if (!p) return -1;
    int r = PyList_Append(out, p);
    Py_DECREF(p);
    return r;
}

/* _pairs's results branch: each result's tool (its call's, else its own name, else "unknown") and characters, then
 * the rest of the message's as the user's */
static int p_result_pairs(Profile *self, PyObject *prof, PyObject *rs, long long chars, PyObject *out) {
    PyObject *tools = SLOT(prof, self->po[P_TOOLS]), *pending = SLOT(prof, self->po[P_PENDING]);
    long long used = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(rs); k++) {
        PyObject *r = PyTuple_GET_ITEM(rs, k), *n = SLOT(r, self->ro[2]);
        PyObject *name = p_pop(pending, SLOT(r, self->ro[0]));
        if (!name && PyErr_Occurred()) return -1;
        int truthy = name ? PyObject_IsTrue(name) : 0;
        if (truthy < 0) {
            Py_DECREF(name);
            return -1;
        }
        if (!truthy) {
            Py_XDECREF(name);
            PyObject *own = SLOT(r, self->ro[1]);
            name = Py_NewRef(own != Py_None && PyUnicode_GET_LENGTH(own) ? own : self->w_unknown);
        }
        PyObject *cat = p_tool(self, tools, name, 1, n) < 0 ? NULL : p_category(self, name);
        Py_DECREF(name);
        int r2 = cat ? p_pair(out, cat, n) : -1;
        Py_XDECREF(cat);
        if (r2 < 0) return -1;
        long long c = 0;
        p_small(n, &c);  /* (checked) */
        used += c;
    }
    if (chars - used > 0) {
        PyObject *rest = PyLong_FromLongLong(chars - used);
        int r = rest ? p_pair(out, self->w_user, rest) : -1;
        Py_XDECREF(rest);
        if (r < 0) return -1;
    }
    return 0;
}

/* _add: the pairs into the session's and the context's sums, the record kept; *total: the characters added */
static int p_add_pairs(Profile *self, PyObject *prof, PyObject *e, PyObject *list, long long *total) {
    PyObject *session = SLOT(prof, self->po[P_SESSION]), *cur = SLOT(prof, self->po[P_CUR]);
    PyObject *pairs = PyList_AsTuple(list);
    if (!pairs) return -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(pairs); k++) {
        PyObject *p = PyTuple_GET_ITEM(pairs, k), *cat = PyTuple_GET_ITEM(p, 0), *n = PyTuple_GET_ITEM(p, 1);
        long long v = 0;
        p_small(n, &v);  /* (every count here is checked, or a difference of checked ones) */
        if (v > 0) {
            if (p_add(self, session, cat, n) < 0 || p_add(self, cur, cat, n) < 0) {
                Py_DECREF(pairs);
                return -1;
            }
            *total += v;
        }
    }
    PyObject *rec = PyTuple_Pack(3, SLOT(e, self->eo[E_ID]), SLOT(e, self->eo[E_INDEX]), pairs);
    Py_DECREF(pairs);
    if (!rec) return -1;
    int r = PyList_Append(SLOT(prof, self->po[P_RECORDS]), rec);
    Py_DECREF(rec);
    return r;
}

/* sum(cur.values()) into *out when every value is a small int: 1, or 0 */
static int p_cur_total(PyObject *cur, long long *out) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    long long s = 0, n;
    while (PyDict_Next(cur, &pos, &k, &v)) {
        if (!p_small(v, &n)) return 0;
        s += n;
    }
    if (s <= -P_LIMIT || s >= P_LIMIT) return 0;
    *out = s;
    return 1;
}

/* a slot set to a new int (-1 on error) */
static int p_set_int(PyObject *o, Py_ssize_t off, long long v) {
    PyObject *n = PyLong_FromLongLong(v);
    if (!n) return -1;
    Py_XSETREF(SLOT(o, off), n);
    return 0;
}

static int p_set_float(PyObject *o, Py_ssize_t off, double v) {
    PyObject *n = PyFloat_FromDouble(v);
    if (!n) return -1;
    Py_XSETREF(SLOT(o, off), n);
    return 0;
}

static inline void p_set(PyObject *o, Py_ssize_t off, PyObject *v) {
    Py_XSETREF(SLOT(o, off), Py_NewRef(v));
}

/* what on_entry does with a metadata entry whose flags say a model or a context window (pi's custom and model_change
 * lines): the model's count and Evidence.add (window._meta_values); SessionProfiler's call does nothing with it (no
 * usage). 1, 0 (declined: a flag ``ignored``, an OpenClaw custom type, no such flag, a usage), or -1 on error. */
static int p_meta(Profile *self, PyObject *e, PyObject *models, PyObject *ev) {
    PyObject *x = SLOT(e, self->eo[E_EXTRA]), *model = SLOT(e, self->eo[E_MODEL]);
    if (!x || !PyDict_CheckExact(x) || !PyDict_GET_SIZE(x) || SLOT(e, self->eo[E_USAGE]) != Py_None
        || !str_or_none(model) || !SLOT(e, self->eo[E_LINENO]))
        return 0;
    PyObject *w, *mid;  /* the window and the model it says, where Evidence.add takes them */
    int says = said_window_model(x, self->rows->context_window, self->rows->model, &w, &mid);
    if (says <= 0) return says;  /* (none: _meta_values reads the object then) */
    int ignored = PyDict_Contains(x, self->w_ignored);
    if (ignored) return ignored < 0 ? -1 : 0;
    PyObject *ct = PyDict_GetItemWithError(x, self->w_custom_type);
    if (!ct && PyErr_Occurred()) return -1;
    if (ct && PyUnicode_Check(ct)) {
        int oc = PyUnicode_Tailmatch(ct, self->w_openclaw, 0, PY_SSIZE_T_MAX, -1);
        if (oc) return oc < 0 ? -1 : 0;  /* (an OpenClaw mark: counted in Python) */
    }
    Py_INCREF(e);
    int r = 0;
    if (model != Py_None && PyUnicode_GET_LENGTH(model) && p_add(self, models, model, self->one) < 0) goto error;
    if (w && (PyObject_SetAttr(ev, self->w_recorded, w) < 0
              || PyObject_SetAttr(ev, self->w_recorded_line, SLOT(e, self->eo[E_LINENO])) < 0))
        goto error;
    if (mid && PyObject_SetAttr(ev, self->w_model_hint, mid) < 0) goto error;
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_DECREF(e);
    return r;
}

/* one message line: what p_read finds (before anything is changed), then what on_entry and _message do with it
 * (p_evidence, p_turn, p_assistant or p_other), the profiler's counters and times written back at the end (p_write) */
typedef struct {
    PyObject *prof, *e, *role, *model, *results, *calls, *kinds, *usage, *stop, *tool_chars, *gaps, *recorded;
    int claude, assistant, user, context, empty, placeholder, same, has_ts, has_first, has_last, has_prev, has_anchor,
        has_base, set_first, set_last, gap_added;
    long long chars, ints[NPINTS], was[NPINTS], kv[6], u[4], anchor, base0, cur_total, gap_n;
    double ts, first, last, prev, idle, gap;
} Msg;

/* the flags: none, or a Claude Code attachment's (``attachment`` and ``context``: such a line is handled as one
 * without flags, but for a ``context``, which makes it no user turn). 1, 0 (others), -1 on error */
static int p_read_flags(Profile *self, Msg *m) {
    PyObject *x = SLOT(m->e, self->eo[E_EXTRA]);
    if (x == Py_None) return 1;
    if (!x || !PyDict_CheckExact(x)) return 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(x, &pos, &k, &v))
        if (!same_str(k, self->w_attachment) && !same_str(k, self->w_context)) return 0;
    PyObject *c = PyDict_GetItemWithError(x, self->w_context);
    if (!c && PyErr_Occurred()) return -1;
    if (c && (m->context = PyObject_IsTrue(c)) < 0) return -1;
    return 1;
}

/* the profiler's state this reads: counters that are small ints, times that are floats or None, its maps (1 or 0) */
static int p_read_profiler(Profile *self, Msg *m) {
    PyObject *prof = m->prof;
    for (int k = 0; k < NPINTS; k++)
        if (!p_small(SLOT(prof, self->pi[k]), &m->ints[k])) return 0;
    memcpy(m->was, m->ints, sizeof m->ints);
    PyObject *gaps = m->gaps = SLOT(prof, self->po[P_GAPS]), *pmain = SLOT(prof, self->po[P_MAIN]);
    PyObject *idle = SLOT(prof, self->po[P_IDLE_TIME]), *recorded = m->recorded = SLOT(prof, self->po[P_RECORDED]);
    if (!p_time(SLOT(prof, self->po[P_FIRST_TS]), &m->first, &m->has_first)
        || !p_time(SLOT(prof, self->po[P_LAST_TS]), &m->last, &m->has_last)
        || !p_time(SLOT(prof, self->po[P_PREV_TS]), &m->prev, &m->has_prev) || !idle || !PyFloat_CheckExact(idle)
        || !gaps || !Py_IS_TYPE(gaps, self->welford) || !p_small(SLOT(gaps, self->wo[0]), &m->gap_n) || m->gap_n < 0
        || !SLOT(gaps, self->wo[1]) || !PyFloat_CheckExact(SLOT(gaps, self->wo[1])) || !SLOT(gaps, self->wo[2])
        || !PyFloat_CheckExact(SLOT(gaps, self->wo[2])) || !pmain || !Py_IS_TYPE(pmain, self->main)
        || !recorded || !PyByteArray_CheckExact(recorded) || !SLOT(prof, self->po[P_POINTS]))
        return 0;
    m->idle = PyFloat_AS_DOUBLE(idle);
    int dicts[] = {P_SESSION, P_CUR, P_KINDS, P_TOOLS, P_PENDING};
    for (int k = 0; k < 5; k++)
        if (!SLOT(prof, self->po[dicts[k]]) || !PyDict_CheckExact(SLOT(prof, self->po[dicts[k]]))) return 0;
    return SLOT(prof, self->po[P_RECORDS]) && PyList_CheckExact(SLOT(prof, self->po[P_RECORDS]));
}

/* an assistant message's calls, kinds, usage and stop, and the profiler's anchor and baseline (1, 0, -1) */
static int p_read_assistant(Profile *self, Msg *m) {
    PyObject *e = m->e, *prof = m->prof;
    m->calls = SLOT(e, self->eo[E_CALLS]);
    m->kinds = SLOT(e, self->eo[E_KINDS]);
    m->usage = SLOT(e, self->eo[E_USAGE]);
    m->stop = SLOT(e, self->eo[E_STOP]);
    PyObject *empty = SLOT(e, self->eo[E_EMPTY]), *key = SLOT(e, self->eo[E_MSG_KEY]);
    PyObject *last_key = SLOT(prof, self->po[P_LAST_KEY]);
    if (!m->calls || !PyTuple_CheckExact(m->calls) || !str_or_none(m->stop) || (empty != Py_True && empty != Py_False)
        || !m->usage || !SLOT(e, self->eo[E_LINENO]) || !str_or_none(key) || !str_or_none(last_key))
        return 0;
    m->empty = empty == Py_True;
    if (m->claude) {  /* _assistant's ``same``: a line of the response before it (its message id and request) */
        Py_ssize_t points = PyObject_Size(SLOT(prof, self->po[P_POINTS]));
        if (points < 0) return -1;
        m->same = key != Py_None && last_key != Py_None && same_str(key, last_key) && points > 0;
        if (m->same && PyByteArray_GET_SIZE(m->recorded) < 1) return 0;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(m->calls); k++) {
        PyObject *c = PyTuple_GET_ITEM(m->calls, k);
        if (!Py_IS_TYPE(c, self->call) || !str_or_none(SLOT(c, self->co[0])) || !str_or_none(SLOT(c, self->co[1])))
            return 0;
    }
    if (m->kinds == self->empty) {
        m->kinds = NULL;
    } else {
        if (!m->kinds || !Py_IS_TYPE(m->kinds, self->kinds)) return 0;
        for (int k = 0; k < 6; k++)
            if (!p_small(SLOT(m->kinds, self->ko[k]), &m->kv[k])) return 0;
    }
    if (m->usage != Py_None) {
        if (!Py_IS_TYPE(m->usage, self->usage)) return 0;
        for (int k = 0; k < 4; k++)
            if (!p_small(SLOT(m->usage, self->uo[k]), &m->u[k])) return 0;
        PyObject *ph = SLOT(m->usage, self->uo[4]);
        if (ph != Py_True && ph != Py_False) return 0;
        m->placeholder = ph == Py_True;
    }
    PyObject *baseline = SLOT(prof, self->po[P_BASELINE]), *anchor = SLOT(prof, self->po[P_ANCHOR]);
    if (anchor != Py_None) {
        if (!p_small(anchor, &m->anchor)) return 0;
        m->has_anchor = 1;
    }
    if (baseline != Py_None) {
        if (!baseline || !PyTuple_CheckExact(baseline) || PyTuple_GET_SIZE(baseline) < 1
            || !p_small(PyTuple_GET_ITEM(baseline, 0), &m->base0))
            return 0;
        m->has_base = 1;
    }
    long long context = m->u[0] + m->u[2] + m->u[3];
    int rec = m->usage != Py_None && context > 0;
    if ((rec && !m->has_base) || (!rec && !m->has_anchor))  /* what _cur_total gives there */
        return p_cur_total(SLOT(prof, self->po[P_CUR]), &m->cur_total);
    return 1;
}

/* a toolResult message's characters by tool (1, 0) */
static int p_read_tool_chars(Profile *self, Msg *m) {
    PyObject *tc = SLOT(m->e, self->eo[E_TOOL_CHARS]);
    m->tool_chars = NULL;
    if (tc == self->empty) return 1;
    if (!tc || !PyDict_CheckExact(tc)) return 0;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    long long n;
    while (PyDict_Next(tc, &pos, &k, &v))
        if (!PyUnicode_CheckExact(k) || !p_small(v, &n)) return 0;
    if (PyDict_GET_SIZE(tc)) m->tool_chars = tc;
    return 1;
}

/* what it is sure of: 1, else 0 (nothing changed), or -1 on error */
static int p_read(Profile *self, Msg *m, PyObject *models, PyObject *ev_main) {
    PyObject *e = m->e, *prof = m->prof;
    if (!Py_IS_TYPE(e, self->full) || !Py_IS_TYPE(prof, self->prof) || !same_str(SLOT(e, self->eo[E_KIND]), self->w_message)
        || !PyDict_CheckExact(models) || !Py_IS_TYPE(ev_main, self->main))
        return 0;
    int r = p_read_flags(self, m);
    if (r <= 0) return r;
    /* pi, or Claude Code (whose split lines of one response are one request: ``same``; whose consecutive
     * assistant messages are one API message: view.merges; and which has no toolResult role) */
    m->claude = same_str(SLOT(prof, self->po[P_FMT]), self->w_claude);
    if (!m->claude && !same_str(SLOT(prof, self->po[P_FMT]), self->w_pi)) return 0;
    PyObject *role = m->role = SLOT(e, self->eo[E_ROLE]);
    m->assistant = same_str(role, self->w_assistant);
    m->user = !m->assistant && same_str(role, self->w_user);
    int tool_result = !m->claude && !m->assistant && !m->user && same_str(role, self->w_tool_result);
    if (!m->assistant && !m->user && !tool_result) return 0;
    m->model = SLOT(e, self->eo[E_MODEL]);
    m->results = SLOT(e, self->eo[E_RESULTS]);
    if (!str_or_none(m->model) || !p_time(SLOT(e, self->eo[E_TS]), &m->ts, &m->has_ts)
        || !p_small(SLOT(e, self->eo[E_CHARS]), &m->chars) || m->chars < 0 || !p_results_ok(self, m->results)
        || !SLOT(e, self->eo[E_ID]) || !SLOT(e, self->eo[E_INDEX]) || !p_read_profiler(self, m))
        return 0;
    return m->assistant ? p_read_assistant(self, m) : tool_result ? p_read_tool_chars(self, m) : 1;
}

/* on_entry's part: the model's count, and Evidence.add: the index passes' add_assistant, or where it declines (a value
 * it does not take), Evidence.add itself (-1 on error) */
static int p_evidence(Profile *self, Msg *m, PyObject *models, PyObject *ev, PyObject *ev_main) {
    int named = m->model != Py_None && PyUnicode_GET_LENGTH(m->model) > 0;
    if (named && p_add(self, models, m->model, self->one) < 0) return -1;
    p_set(ev_main, self->main_seen, Py_True);
    if (!m->assistant) return 0;
    int r = add_assistant(self->rows, ev, m->e, m->model, named && !same_str(m->model, self->rows->synthetic));
    if (r) return r < 0 ? -1 : 0;
    PyObject *done = PyObject_CallMethodOneArg(ev, self->w_add, m->e);
    Py_XDECREF(done);
    return done ? 0 : -1;
}

/* _message's count, its API message (view.message_groups), and the span and gaps between messages */
static void p_turn(Profile *self, Msg *m) {
    PyObject *prof = m->prof, *api_role = SLOT(prof, self->po[P_API_ROLE]);
    long long *ints = m->ints;
    p_set(SLOT(prof, self->po[P_MAIN]), self->main_seen, Py_True);
    ints[P_MESSAGES]++;
    if (m->assistant) {
        int unsent = m->empty || unsent_stop(m->stop, self->unsent);
        /* (pi: two assistant messages are two turns; Claude Code's meet in one, view.merges) */
        if (!unsent && !(m->claude && same_str(api_role, self->w_assistant))) {
            p_set(prof, self->po[P_API_ROLE], self->w_assistant);
            ints[P_API_MESSAGES]++;
        }
    } else if (!same_str(api_role, self->w_user)) {
        p_set(prof, self->po[P_API_ROLE], self->w_user);
        ints[P_API_MESSAGES]++;
    }
    if (!m->has_ts) return;
    ints[P_TS_MESSAGES]++;
    m->set_first = !m->has_first || m->ts < m->first;
    m->set_last = !m->has_last || m->ts > m->last;
    if (!m->has_prev) return;
    m->gap = m->ts > m->prev ? m->ts - m->prev : 0.0;
    m->gap_added = 1;
    if (m->gap >= P_IDLE_GAP) {
        ints[P_IDLE_GAPS]++;
        m->idle += m->gap;
        ints[P_PERIODS]++;  /* _close_period */
        if (ints[P_PERIOD_CALLS] >= P_BURST_MIN) {
            ints[P_BURSTS]++;
            ints[P_BURST_CALLS] += ints[P_PERIOD_CALLS];
        }
        ints[P_PERIOD_CALLS] = 0;
    }
}

/* _assistant's calls: counted by tool, their ids kept for their results (at most ``cap``) (-1 on error) */
static int p_calls(Profile *self, Msg *m) {
    PyObject *tools = SLOT(m->prof, self->po[P_TOOLS]), *pending = SLOT(m->prof, self->po[P_PENDING]);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(m->calls); k++) {
        PyObject *c = PyTuple_GET_ITEM(m->calls, k), *id = SLOT(c, self->co[0]), *name = SLOT(c, self->co[1]);
        m->ints[P_CALLS]++;
        m->ints[P_PERIOD_CALLS]++;
        if (name == Py_None || !PyUnicode_GET_LENGTH(name)) name = self->w_unknown;
        if (p_tool(self, tools, name, 0, self->one) < 0) return -1;
        if (id == Py_None || !PyUnicode_GET_LENGTH(id)) continue;
        if (PyDict_SetItem(pending, id, name) < 0) return -1;
        Py_ssize_t pos = 0;
        PyObject *k0, *v0;
        if (PyDict_GET_SIZE(pending) > self->cap && PyDict_Next(pending, &pos, &k0, &v0)) {
            Py_INCREF(k0);
            int r = PyDict_DelItem(pending, k0);
            Py_DECREF(k0);
            if (r < 0) return -1;
        }
    }
    return 0;
}

/* _assistant's point of the timeline: the recorded context, else the estimate (and the baseline from the first
 * recorded usage); a response split over lines (Claude Code) keeps one point (-1 on error) */
static int p_point(Profile *self, Msg *m, long long context, int rec) {
    PyObject *prof = m->prof, *recorded = m->recorded;
    long long value;
    if (rec) {
        if (!m->has_base) {  /* tokens_range of the characters the first usage covered */
            long long covered = m->cur_total, tok = 0, high = 0;
            if (covered > 0) {
                tok = p_quarter(covered);
                high = (long long)ceil((double)covered / 3.5);
            }
            long long low = tok;
            PyObject *b = Py_BuildValue("(LLLOLL)", context - tok > 0 ? context - tok : 0,
                                        context - high > 0 ? context - high : 0, context - low > 0 ? context - low : 0,
                                        SLOT(m->e, self->eo[E_LINENO]), context, covered);
            if (!b) return -1;
            Py_XSETREF(SLOT(prof, self->po[P_BASELINE]), b);
        }
        value = context;
        if (p_set_int(prof, self->po[P_LAST_USAGE], context) < 0) return -1;
    } else {
        value = m->has_anchor ? m->anchor + p_quarter(m->ints[P_SINCE_CHARS])
                              : (m->has_base ? m->base0 : 0) + p_quarter(m->cur_total);
    }
    Py_ssize_t size = PyByteArray_GET_SIZE(recorded);
    if (m->same) {  /* the response's point: the recorded value, or the estimate where none was recorded */
        if (!rec && PyByteArray_AS_STRING(recorded)[size - 1]) return 0;
        PyObject *v = PyLong_FromLongLong(value);
        int r = v ? PySequence_SetItem(SLOT(prof, self->po[P_POINTS]), -1, v) : -1;
        Py_XDECREF(v);
        if (r < 0) return -1;
        PyByteArray_AS_STRING(recorded)[size - 1] = (char)rec;
        return 0;
    }
    PyObject *v = PyLong_FromLongLong(value);
    PyObject *r = v ? PyObject_CallMethodOneArg(SLOT(prof, self->po[P_POINTS]), self->w_append, v) : NULL;
    Py_XDECREF(v);
    if (!r) return -1;
    Py_DECREF(r);
    if (PyByteArray_Resize(recorded, size + 1) < 0) return -1;
    PyByteArray_AS_STRING(recorded)[size] = (char)rec;
    return 0;
}

/* SessionProfiler._assistant (-1 on error) */
static int p_assistant(Profile *self, Msg *m, PyObject *out) {
    PyObject *prof = m->prof;
    long long *ints = m->ints, total = 0;
    if (p_calls(self, m) < 0) return -1;
    long long context = m->usage == Py_None ? 0 : m->u[0] + m->u[2] + m->u[3];
    int rec = m->usage != Py_None && context > 0;
    if (!m->same) {
        ints[P_ASSISTANT_TURNS]++;
        ints[P_RESPONSE_CHARS] = 0;
    }
    ints[P_RESPONSE_CHARS] += m->chars;
    if (p_point(self, m, context, rec) < 0) return -1;
    p_set(prof, self->po[P_LAST_KEY], SLOT(m->e, self->eo[E_MSG_KEY]));
    if (m->kinds) {  /* _pairs: the reply's characters by block kind */
        PyObject *pk = SLOT(prof, self->po[P_KINDS]);
        for (int k = 0; k < 6; k++)
            if (m->kv[k] && p_add(self, pk, self->kind_names[k], SLOT(m->kinds, self->ko[k])) < 0) return -1;
    }
    if (p_pair(out, self->w_assistant, SLOT(m->e, self->eo[E_CHARS])) < 0 || p_add_pairs(self, prof, m->e, out, &total) < 0)
        return -1;
    ints[P_SINCE_CHARS] += total;
    if (rec) {  /* a streaming record's output is no count: chars/4 of the response is */
        m->anchor = m->placeholder ? context : context + m->u[1];
        ints[P_SINCE_CHARS] = m->placeholder ? ints[P_RESPONSE_CHARS] : 0;
        if (p_set_int(prof, self->po[P_ANCHOR], m->anchor) < 0) return -1;
    }
    p_set(prof, self->po[P_PREV_ROLE], self->w_assistant);
    ints[P_CHARS_AFTER] = 0;
    return 0;
}

/* _message's rest for a user or toolResult message: its turn, and _pairs and _add (-1 on error) */
static int p_other(Profile *self, Msg *m, PyObject *out) {
    PyObject *prof = m->prof, *results = m->results;
    long long *ints = m->ints, total = 0;
    p_set(prof, self->po[P_PREV_ROLE], m->role);
    ints[P_CHARS_AFTER] += m->chars;
    if (m->user && !PyTuple_GET_SIZE(results) && !m->context) ints[P_USER_TURNS]++;
    if (m->tool_chars) {  /* a toolResult's characters by tool; its calls are answered */
        PyObject *tools = SLOT(prof, self->po[P_TOOLS]), *pending = SLOT(prof, self->po[P_PENDING]), *name, *n;
        Py_ssize_t pos = 0;
        while (PyDict_Next(m->tool_chars, &pos, &name, &n)) {
            if (p_tool(self, tools, name, 1, n) < 0) return -1;
            PyObject *cat = p_category(self, name);
            int r = cat ? p_pair(out, cat, n) : -1;
            Py_XDECREF(cat);
            if (r < 0) return -1;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(results); k++) {
            PyObject *gone = p_pop(pending, SLOT(PyTuple_GET_ITEM(results, k), self->ro[0]));
            if (!gone && PyErr_Occurred()) return -1;
            Py_XDECREF(gone);
        }
    } else if (PyTuple_GET_SIZE(results)) {
        if (p_result_pairs(self, prof, results, m->chars, out) < 0) return -1;
    } else if (p_pair(out, m->user ? self->w_user : self->w_other, SLOT(m->e, self->eo[E_CHARS])) < 0) {
        return -1;
    }
    if (p_add_pairs(self, prof, m->e, out, &total) < 0) return -1;
    ints[P_SINCE_CHARS] += total;
    return 0;
}

/* the times, the gaps' running figures (_Welford.add) and the counters that changed, written back (-1 on error) */
static int p_write(Profile *self, Msg *m) {
    PyObject *prof = m->prof, *gaps = m->gaps;
    if (m->has_ts) {
        PyObject *t = SLOT(m->e, self->eo[E_TS]);
        if (m->set_first) p_set(prof, self->po[P_FIRST_TS], t);
        if (m->set_last) p_set(prof, self->po[P_LAST_TS], t);
        if (m->gap_added) {
            double mean = PyFloat_AS_DOUBLE(SLOT(gaps, self->wo[1])), m2 = PyFloat_AS_DOUBLE(SLOT(gaps, self->wo[2]));
            double d = m->gap - mean;
            mean += d / (double)(m->gap_n + 1);
            m2 += d * (m->gap - mean);
            if (p_set_int(gaps, self->wo[0], m->gap_n + 1) < 0 || p_set_float(gaps, self->wo[1], mean) < 0
                || p_set_float(gaps, self->wo[2], m2) < 0)
                return -1;
            if (m->gap >= P_IDLE_GAP && p_set_float(prof, self->po[P_IDLE_TIME], m->idle) < 0) return -1;
        }
        p_set(prof, self->po[P_PREV_TS], t);
    }
    for (int k = 0; k < NPINTS; k++)
        if (m->was[k] != m->ints[k] && p_set_int(prof, self->pi[k], m->ints[k]) < 0) return -1;
    return 0;
}

static PyObject *Profile_message(Profile *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "message(prof, e, models, ev, ev_main)");
        return NULL;
    }
    if (!self->prof) {
        PyErr_SetString(PyExc_TypeError, "Profile was not initialised");
        return NULL;
    }
    PyObject *prof = args[0], *e = args[1], *models = args[2], *ev = args[3], *ev_main = args[4];
    if (Py_IS_TYPE(e, self->full) && Py_IS_TYPE(prof, self->prof) && same_str(SLOT(e, self->eo[E_KIND]), self->w_meta)
        && PyDict_CheckExact(models)) {
        int r = p_meta(self, e, models, ev);
        if (r < 0) return NULL;
        self->taken += r;
        return PyBool_FromLong(r);
    }
    Msg m = {.prof = prof, .e = e};
    int r = p_read(self, &m, models, ev_main);
    if (r <= 0) return r < 0 ? NULL : Py_NewRef(Py_False);
    if (p_evidence(self, &m, models, ev, ev_main) < 0) return NULL;
    p_turn(self, &m);
    PyObject *out = PyList_New(0);  /* the message's (category, characters) pairs */
    if (!out) return NULL;
    r = m.assistant ? p_assistant(self, &m, out) : p_other(self, &m, out);
    Py_DECREF(out);
    if (r < 0 || p_write(self, &m) < 0) return NULL;
    self->taken++;
    Py_RETURN_TRUE;
}

static PyObject *Profile_taken(Profile *self, void *closure) {
    return PyLong_FromLongLong(self->taken);
}

static PyGetSetDef Profile_getset[] = {
    {"taken", (getter)Profile_taken, NULL, "messages done here so far", NULL},
    {NULL},
};

static PyMethodDef Profile_methods[] = {
    {"message", (PyCFunction)(void (*)(void))Profile_message, METH_FASTCALL,
     "message(prof, e, models, ev, ev_main) -> bool: profile_session's on_entry for a pi or Claude Code message without flags."},
    {NULL},
};

static PyTypeObject ProfileType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ctxtool._scan.Profile",
    .tp_basicsize = sizeof(Profile),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Profile_init,
    .tp_dealloc = (destructor)Profile_dealloc,
    .tp_methods = Profile_methods,
    .tp_getset = Profile_getset,
    .tp_doc = "Profile(profiler_cls, welford_cls, main_thread_cls, full_cls, kinds_cls, call_cls, result_cls, usage_cls, rows, "
              "EMPTY, UNSENT_STOPS, pending_cap): profile's per-message accounting (rows: the index passes, ``Rows``).",
};
