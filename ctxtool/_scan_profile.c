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

typedef struct {
    PyObject_HEAD
    PyTypeObject *prof, *welford, *main, *full, *kinds, *call, *result, *usage;
    PyObject *empty, *unsent;  /* model.EMPTY, view.UNSENT_STOPS */
    Py_ssize_t cap;            /* SessionProfiler.PENDING_CAP */
    Py_ssize_t pi[NPINTS], po[NPOBJS], eo[NESLOTS], uo[5], wo[3], ko[6], co[2], ro[3], main_seen;
    PyObject *w_meta, *w_context_window, *w_model, *w_ignored, *w_custom_type, *w_openclaw, *w_recorded,
        *w_recorded_line, *w_model_hint;
    PyObject *w_pi, *w_claude, *w_attachment, *w_context, *w_message, *w_user, *w_assistant, *w_tool_result, *w_other, *w_unknown, *w_synthetic, *w_tool,
        *w_last_model, *w_peaks, *w_append, *zero, *one, *pair0;
    PyObject *kind_names[6];
    PyObject *names;           /* tool name -> "tool:" + name */
    long long taken;           /* messages done here (the tests read it) */
} Profile;

static void Profile_dealloc(Profile *self) {
    Py_XDECREF(self->prof); Py_XDECREF(self->welford); Py_XDECREF(self->main); Py_XDECREF(self->full);
    Py_XDECREF(self->kinds); Py_XDECREF(self->call); Py_XDECREF(self->result); Py_XDECREF(self->usage);
    Py_XDECREF(self->empty); Py_XDECREF(self->unsent);
    PyObject **w[] = {&self->w_pi, &self->w_message, &self->w_user, &self->w_assistant, &self->w_tool_result,
                      &self->w_other, &self->w_unknown, &self->w_synthetic, &self->w_tool, &self->w_last_model,
                      &self->w_peaks, &self->w_append, &self->zero, &self->one, &self->pair0, &self->names};
    for (size_t k = 0; k < sizeof w / sizeof *w; k++) Py_XDECREF(*w[k]);
    Py_XDECREF(self->w_claude);
    PyObject **more[] = {&self->w_meta, &self->w_context_window, &self->w_model, &self->w_ignored, &self->w_custom_type,
                         &self->w_openclaw, &self->w_recorded, &self->w_recorded_line, &self->w_model_hint};
    for (size_t k = 0; k < sizeof more / sizeof *more; k++) Py_XDECREF(*more[k]);
    Py_XDECREF(self->w_attachment);
    Py_XDECREF(self->w_context);
    for (int k = 0; k < 6; k++) Py_XDECREF(self->kind_names[k]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Profile_init(Profile *self, PyObject *args, PyObject *kw) {
    PyObject *cls[8], *empty, *unsent;
    Py_ssize_t cap;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!OO!n", &PyType_Type, &cls[0], &PyType_Type, &cls[1], &PyType_Type,
                          &cls[2], &PyType_Type, &cls[3], &PyType_Type, &cls[4], &PyType_Type, &cls[5], &PyType_Type,
                          &cls[6], &PyType_Type, &cls[7], &empty, &PyTuple_Type, &unsent, &cap))
        return -1;
    static const char *MS[] = {"seen"}, *CS[] = {"id", "name"}, *RS[] = {"id", "name", "chars"};
    Py_ssize_t mo[1];
    if (slot_offsets(cls[0], PROF_INTS, NPINTS, self->pi) < 0 || slot_offsets(cls[0], PROF_OBJS, NPOBJS, self->po) < 0
        || slot_offsets(cls[1], PW_SLOTS, 3, self->wo) < 0 || slot_offsets(cls[2], MS, 1, mo) < 0
        || slot_offsets(cls[3], PE_SLOTS, NESLOTS, self->eo) < 0 || slot_offsets(cls[4], PK_SLOTS, 6, self->ko) < 0
        || slot_offsets(cls[5], CS, 2, self->co) < 0 || slot_offsets(cls[6], RS, 3, self->ro) < 0
        || slot_offsets(cls[7], PU_SLOTS, 5, self->uo) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(unsent); k++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(unsent, k))) {
            PyErr_SetString(PyExc_TypeError, "Profile: the unsent stop reasons are strs");
            return -1;
        }
    self->main_seen = mo[0];
    self->cap = cap;
    PyTypeObject **into[] = {&self->prof, &self->welford, &self->main, &self->full, &self->kinds, &self->call,
                             &self->result, &self->usage};
    for (int k = 0; k < 8; k++) Py_XSETREF(*into[k], (PyTypeObject *)Py_NewRef(cls[k]));
    Py_XSETREF(self->empty, Py_NewRef(empty));
    Py_XSETREF(self->unsent, Py_NewRef(unsent));
    const char *words[] = {"pi", "message", "user", "assistant", "toolResult", "other", "unknown", "<synthetic>", "tool:",
                           "last_model", "peaks", "append"};
    PyObject **w[] = {&self->w_pi, &self->w_message, &self->w_user, &self->w_assistant, &self->w_tool_result,
                      &self->w_other, &self->w_unknown, &self->w_synthetic, &self->w_tool, &self->w_last_model,
                      &self->w_peaks, &self->w_append};
    for (int k = 0; k < 12; k++)
        if (!(*w[k] = PyUnicode_InternFromString(words[k]))) return -1;
    const char *more_words[] = {"meta", "context_window", "model", "ignored", "custom_type", "openclaw.", "recorded",
                                "recorded_line", "model_hint"};
    PyObject **more[] = {&self->w_meta, &self->w_context_window, &self->w_model, &self->w_ignored, &self->w_custom_type,
                         &self->w_openclaw, &self->w_recorded, &self->w_recorded_line, &self->w_model_hint};
    for (int k = 0; k < 9; k++)
        if (!(*more[k] = PyUnicode_InternFromString(more_words[k]))) return -1;
    if (!(self->w_claude = PyUnicode_InternFromString("claude")) || !(self->w_attachment = PyUnicode_InternFromString("attachment"))
        || !(self->w_context = PyUnicode_InternFromString("context")))
        return -1;
    for (int k = 0; k < 6; k++)
        if (!(self->kind_names[k] = PyUnicode_InternFromString(PK_SLOTS[k]))) return -1;
    if (!(self->zero = PyLong_FromLong(0)) || !(self->one = PyLong_FromLong(1)) || !(self->names = PyDict_New()))
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

/* whether ``o`` is a str or None */
static inline int p_str_none(PyObject *o) {
    return o == Py_None || (o && PyUnicode_CheckExact(o));
}

/* the results of an entry: a tuple of Results with str or None ids and names and small chars (1), or 0 */
static int p_results_ok(Profile *self, PyObject *rs) {
    if (!rs || !PyTuple_CheckExact(rs)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(rs); k++) {
        PyObject *r = PyTuple_GET_ITEM(rs, k);
        long long n;
        if (!Py_IS_TYPE(r, self->result) || !p_str_none(SLOT(r, self->ro[0])) || !p_str_none(SLOT(r, self->ro[1]))
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
        || !p_str_none(model) || !SLOT(e, self->eo[E_LINENO]))
        return 0;
    PyObject *w = PyDict_GetItemWithError(x, self->w_context_window);
    if (!w && PyErr_Occurred()) return -1;
    PyObject *mid = PyDict_GetItemWithError(x, self->w_model);
    if (!mid && PyErr_Occurred()) return -1;
    if (!w && !mid) return 0;  /* (_meta_values reads the object then) */
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
    if (w && PyLong_Check(w) && !PyBool_Check(w)) {
        int positive = PyObject_RichCompareBool(w, self->zero, Py_GT);
        if (positive < 0) goto error;
        if (positive && (PyObject_SetAttr(ev, self->w_recorded, w) < 0
                         || PyObject_SetAttr(ev, self->w_recorded_line, SLOT(e, self->eo[E_LINENO])) < 0))
            goto error;
    }
    if (mid && PyUnicode_Check(mid) && PyUnicode_GET_LENGTH(mid) && PyObject_SetAttr(ev, self->w_model_hint, mid) < 0)
        goto error;
    r = 1;
    goto done;
error:
    r = -1;
done:
    Py_DECREF(e);
    return r;
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
        if (r) self->taken++;
        return PyBool_FromLong(r);
    }
    /* ---- what it is sure of: else False, nothing changed */
    if (!Py_IS_TYPE(e, self->full) || !Py_IS_TYPE(prof, self->prof)
        || !same_str(SLOT(e, self->eo[E_KIND]), self->w_message)
        || !PyDict_CheckExact(models) || !Py_IS_TYPE(ev_main, self->main))
        Py_RETURN_FALSE;
    /* flags: none, or a Claude Code attachment's (``attachment`` and ``context``: such a line is handled as one
     * without flags, but for a ``context``, which makes it no user turn) */
    PyObject *x = SLOT(e, self->eo[E_EXTRA]);
    int context = 0;
    if (x != Py_None) {
        if (!x || !PyDict_CheckExact(x)) Py_RETURN_FALSE;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(x, &pos, &k, &v))
            if (!same_str(k, self->w_attachment) && !same_str(k, self->w_context)) Py_RETURN_FALSE;
        PyObject *c = PyDict_GetItemWithError(x, self->w_context);
        if (!c && PyErr_Occurred()) return NULL;
        if (c && (context = PyObject_IsTrue(c)) < 0) return NULL;
    }
    /* pi, or Claude Code (whose split lines of one response are one request: ``same``; whose consecutive
     * assistant messages are one API message: view.merges; and which has no toolResult role) */
    int claude = same_str(SLOT(prof, self->po[P_FMT]), self->w_claude);
    if (!claude && !same_str(SLOT(prof, self->po[P_FMT]), self->w_pi)) Py_RETURN_FALSE;
    PyObject *role = SLOT(e, self->eo[E_ROLE]);
    int assistant = same_str(role, self->w_assistant), user = !assistant && same_str(role, self->w_user);
    int tool_result = !claude && !assistant && !user && same_str(role, self->w_tool_result);
    if (!assistant && !user && !tool_result) Py_RETURN_FALSE;
    PyObject *model = SLOT(e, self->eo[E_MODEL]), *results = SLOT(e, self->eo[E_RESULTS]);
    long long chars, ints[NPINTS], was[NPINTS];
    double ts = 0, first = 0, last = 0, prev = 0, idle;
    int has_ts, has_first, has_last, has_prev;
    if (!p_str_none(model) || !p_time(SLOT(e, self->eo[E_TS]), &ts, &has_ts) || !p_small(SLOT(e, self->eo[E_CHARS]), &chars)
        || chars < 0 || !p_results_ok(self, results) || !SLOT(e, self->eo[E_ID]) || !SLOT(e, self->eo[E_INDEX]))
        Py_RETURN_FALSE;
    for (int k = 0; k < NPINTS; k++)
        if (!p_small(SLOT(prof, self->pi[k]), &ints[k])) Py_RETURN_FALSE;
    memcpy(was, ints, sizeof ints);
    PyObject *gaps = SLOT(prof, self->po[P_GAPS]), *pmain = SLOT(prof, self->po[P_MAIN]);
    PyObject *idle_o = SLOT(prof, self->po[P_IDLE_TIME]), *recorded = SLOT(prof, self->po[P_RECORDED]);
    long long gap_n;
    if (!p_time(SLOT(prof, self->po[P_FIRST_TS]), &first, &has_first) || !p_time(SLOT(prof, self->po[P_LAST_TS]), &last, &has_last)
        || !p_time(SLOT(prof, self->po[P_PREV_TS]), &prev, &has_prev) || !idle_o || !PyFloat_CheckExact(idle_o)
        || !gaps || !Py_IS_TYPE(gaps, self->welford) || !p_small(SLOT(gaps, self->wo[0]), &gap_n) || gap_n < 0
        || !SLOT(gaps, self->wo[1]) || !PyFloat_CheckExact(SLOT(gaps, self->wo[1])) || !SLOT(gaps, self->wo[2])
        || !PyFloat_CheckExact(SLOT(gaps, self->wo[2])) || !pmain || !Py_IS_TYPE(pmain, self->main)
        || !recorded || !PyByteArray_CheckExact(recorded) || !SLOT(prof, self->po[P_POINTS]))
        Py_RETURN_FALSE;
    int dicts[] = {P_SESSION, P_CUR, P_KINDS, P_TOOLS, P_PENDING};
    for (int k = 0; k < 5; k++)
        if (!SLOT(prof, self->po[dicts[k]]) || !PyDict_CheckExact(SLOT(prof, self->po[dicts[k]]))) Py_RETURN_FALSE;
    if (!SLOT(prof, self->po[P_RECORDS]) || !PyList_CheckExact(SLOT(prof, self->po[P_RECORDS]))) Py_RETURN_FALSE;
    idle = PyFloat_AS_DOUBLE(idle_o);
    PyObject *calls = NULL, *kinds = NULL, *usage = NULL, *stop = NULL, *tool_chars = NULL;
    long long kv[6] = {0}, u[4] = {0}, anchor = 0, base0 = 0, cur_total = 0;
    int has_anchor = 0, has_base = 0, has_cur_total = 0, placeholder = 0, empty = 0, same = 0;
    PyObject *baseline = SLOT(prof, self->po[P_BASELINE]), *anchor_o = SLOT(prof, self->po[P_ANCHOR]);
    if (assistant) {
        calls = SLOT(e, self->eo[E_CALLS]);
        kinds = SLOT(e, self->eo[E_KINDS]);
        usage = SLOT(e, self->eo[E_USAGE]);
        stop = SLOT(e, self->eo[E_STOP]);
        PyObject *empty_o = SLOT(e, self->eo[E_EMPTY]);
        if (!calls || !PyTuple_CheckExact(calls) || !p_str_none(stop) || (empty_o != Py_True && empty_o != Py_False)
            || !usage || !SLOT(e, self->eo[E_LINENO]) || !p_str_none(SLOT(e, self->eo[E_MSG_KEY]))
            || !p_str_none(SLOT(prof, self->po[P_LAST_KEY])))
            Py_RETURN_FALSE;
        if (claude) {  /* _assistant's ``same``: a line of the response before it (its message id and request) */
            PyObject *key = SLOT(e, self->eo[E_MSG_KEY]);
            Py_ssize_t points = PyObject_Size(SLOT(prof, self->po[P_POINTS]));
            if (points < 0) return NULL;
            PyObject *last_key = SLOT(prof, self->po[P_LAST_KEY]);
            same = key != Py_None && last_key != Py_None && same_str(key, last_key) && points > 0;
            if (same && PyByteArray_GET_SIZE(recorded) < 1) Py_RETURN_FALSE;
        }
        empty = empty_o == Py_True;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(calls); k++) {
            PyObject *c = PyTuple_GET_ITEM(calls, k);
            if (!Py_IS_TYPE(c, self->call) || !p_str_none(SLOT(c, self->co[0])) || !p_str_none(SLOT(c, self->co[1])))
                Py_RETURN_FALSE;
        }
        if (kinds == self->empty) {
            kinds = NULL;
        } else {
            if (!kinds || !Py_IS_TYPE(kinds, self->kinds)) Py_RETURN_FALSE;
            for (int k = 0; k < 6; k++)
                if (!p_small(SLOT(kinds, self->ko[k]), &kv[k])) Py_RETURN_FALSE;
        }
        if (usage != Py_None) {
            if (!Py_IS_TYPE(usage, self->usage)) Py_RETURN_FALSE;
            for (int k = 0; k < 4; k++)
                if (!p_small(SLOT(usage, self->uo[k]), &u[k])) Py_RETURN_FALSE;
            PyObject *ph = SLOT(usage, self->uo[4]);
            if (ph != Py_True && ph != Py_False) Py_RETURN_FALSE;
            placeholder = ph == Py_True;
        }
        if (anchor_o != Py_None) {
            if (!p_small(anchor_o, &anchor)) Py_RETURN_FALSE;
            has_anchor = 1;
        }
        if (baseline != Py_None) {
            if (!baseline || !PyTuple_CheckExact(baseline) || PyTuple_GET_SIZE(baseline) < 1
                || !p_small(PyTuple_GET_ITEM(baseline, 0), &base0))
                Py_RETURN_FALSE;
            has_base = 1;
        }
        long long context = u[0] + u[2] + u[3];
        if ((usage != Py_None && context > 0 && !has_base) || ((usage == Py_None || context <= 0) && !has_anchor)) {
            if (!p_cur_total(SLOT(prof, self->po[P_CUR]), &cur_total)) Py_RETURN_FALSE;
            has_cur_total = 1;
        }
    } else if (tool_result) {
        tool_chars = SLOT(e, self->eo[E_TOOL_CHARS]);
        if (tool_chars == self->empty) {
            tool_chars = NULL;
        } else {
            if (!tool_chars || !PyDict_CheckExact(tool_chars)) Py_RETURN_FALSE;
            Py_ssize_t pos = 0;
            PyObject *k, *v;
            long long n;
            while (PyDict_Next(tool_chars, &pos, &k, &v))
                if (!PyUnicode_CheckExact(k) || !p_small(v, &n)) Py_RETURN_FALSE;
            if (!PyDict_GET_SIZE(tool_chars)) tool_chars = NULL;
        }
    }
    (void)has_cur_total;

    /* ---- on_entry: the model's count, and Evidence.add */
    int truthy_model = model != Py_None && PyUnicode_GET_LENGTH(model) > 0;
    if (truthy_model && p_add(self, models, model, self->one) < 0) return NULL;
    p_set(ev_main, self->main_seen, Py_True);
    if (assistant) {
        if (truthy_model && !same_str(model, self->w_synthetic) && PyObject_SetAttr(ev, self->w_last_model, model) < 0)
            return NULL;
        if (usage != Py_None) {
            PyObject *peaks = PyObject_GetAttr(ev, self->w_peaks);
            if (!peaks) return NULL;
            PyObject *c = PyLong_FromLongLong(u[0] + u[2] + u[3]), *best = NULL;
            if (c && PyDict_CheckExact(peaks)) {  /* peaks.get(model) */
                best = PyDict_GetItemWithError(peaks, model);
                best = best ? Py_NewRef(best) : PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
            } else if (c) {
                best = PyObject_CallMethod(peaks, "get", "O", model);
            }
            int better = -1;
            if (best) {
                if (best == Py_None) better = 1;
                else {
                    PyObject *b0 = PySequence_GetItem(best, 0);
                    better = b0 ? PyObject_RichCompareBool(c, b0, Py_GT) : -1;
                    Py_XDECREF(b0);
                }
            }
            if (better > 0) {
                PyObject *peak = PyTuple_Pack(2, c, SLOT(e, self->eo[E_LINENO]));
                better = peak ? PyObject_SetItem(peaks, model, peak) : -1;
                Py_XDECREF(peak);
            }
            Py_XDECREF(best);
            Py_XDECREF(c);
            Py_DECREF(peaks);
            if (better < 0) return NULL;
        }
    }

    /* ---- SessionProfiler._message */
    p_set(pmain, self->main_seen, Py_True);
    ints[P_MESSAGES]++;
    PyObject *api_role = SLOT(prof, self->po[P_API_ROLE]);
    if (assistant) {
        int unsent = empty;
        for (Py_ssize_t k = 0; !unsent && stop != Py_None && k < PyTuple_GET_SIZE(self->unsent); k++)
            unsent = same_str(stop, PyTuple_GET_ITEM(self->unsent, k));
        /* (pi: two assistant messages are two turns; Claude Code's meet in one, view.merges) */
        if (!unsent && !(claude && same_str(api_role, self->w_assistant))) {
            p_set(prof, self->po[P_API_ROLE], self->w_assistant);
            ints[P_API_MESSAGES]++;
        }
    } else if (!same_str(api_role, self->w_user)) {
        p_set(prof, self->po[P_API_ROLE], self->w_user);
        ints[P_API_MESSAGES]++;
    }
    int set_first = 0, set_last = 0, gap_added = 0;
    double gap = 0;
    if (has_ts) {
        ints[P_TS_MESSAGES]++;
        if (!has_first || ts < first) set_first = 1;
        if (!has_last || ts > last) set_last = 1;
        if (has_prev) {
            gap = ts > prev ? ts - prev : 0.0;
            gap_added = 1;
            if (gap >= P_IDLE_GAP) {
                ints[P_IDLE_GAPS]++;
                idle += gap;
                ints[P_PERIODS]++;  /* _close_period */
                if (ints[P_PERIOD_CALLS] >= P_BURST_MIN) {
                    ints[P_BURSTS]++;
                    ints[P_BURST_CALLS] += ints[P_PERIOD_CALLS];
                }
                ints[P_PERIOD_CALLS] = 0;
            }
        }
    }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    long long total = 0;
    PyObject *tools = SLOT(prof, self->po[P_TOOLS]), *pending = SLOT(prof, self->po[P_PENDING]);
    if (assistant) {
        /* _assistant */
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(calls); k++) {
            PyObject *c = PyTuple_GET_ITEM(calls, k), *id = SLOT(c, self->co[0]), *name = SLOT(c, self->co[1]);
            ints[P_CALLS]++;
            ints[P_PERIOD_CALLS]++;
            if (name == Py_None || !PyUnicode_GET_LENGTH(name)) name = self->w_unknown;
            if (p_tool(self, tools, name, 0, self->one) < 0) goto error;
            if (id != Py_None && PyUnicode_GET_LENGTH(id)) {
                if (PyDict_SetItem(pending, id, name) < 0) goto error;
                if (PyDict_GET_SIZE(pending) > self->cap) {
                    Py_ssize_t pos = 0;
                    PyObject *k0, *v0;
                    if (PyDict_Next(pending, &pos, &k0, &v0)) {
                        Py_INCREF(k0);
                        int r = PyDict_DelItem(pending, k0);
                        Py_DECREF(k0);
                        if (r < 0) goto error;
                    }
                }
            }
        }
        long long context = usage == Py_None ? 0 : u[0] + u[2] + u[3];
        int rec = usage != Py_None && context > 0;
        if (!same) {
            ints[P_ASSISTANT_TURNS]++;
            ints[P_RESPONSE_CHARS] = 0;
        }
        ints[P_RESPONSE_CHARS] += chars;
        long long value;
        if (rec) {
            if (!has_base) {
                long long covered = cur_total, tok = 0, high = 0;
                if (covered > 0) {
                    tok = p_quarter(covered);
                    high = (long long)ceil((double)covered / 3.5);
                }
                long long low = tok;
                PyObject *b = Py_BuildValue("(LLLOLL)", context - tok > 0 ? context - tok : 0,
                                            context - high > 0 ? context - high : 0, context - low > 0 ? context - low : 0,
                                            SLOT(e, self->eo[E_LINENO]), context, covered);
                if (!b) goto error;
                Py_XSETREF(SLOT(prof, self->po[P_BASELINE]), b);
            }
            value = context;
            if (p_set_int(prof, self->po[P_LAST_USAGE], context) < 0) goto error;
        } else {
            value = has_anchor ? anchor + p_quarter(ints[P_SINCE_CHARS]) : (has_base ? base0 : 0) + p_quarter(cur_total);
        }
        Py_ssize_t size = PyByteArray_GET_SIZE(recorded);
        if (same) {  /* the response's point: the recorded value, or the estimate where none was recorded */
            if (rec || !PyByteArray_AS_STRING(recorded)[size - 1]) {
                PyObject *v = PyLong_FromLongLong(value);
                int r = v ? PySequence_SetItem(SLOT(prof, self->po[P_POINTS]), -1, v) : -1;
                Py_XDECREF(v);
                if (r < 0) goto error;
                PyByteArray_AS_STRING(recorded)[size - 1] = (char)rec;
            }
        } else {
            PyObject *v = PyLong_FromLongLong(value);
            PyObject *r = v ? PyObject_CallMethodOneArg(SLOT(prof, self->po[P_POINTS]), self->w_append, v) : NULL;
            Py_XDECREF(v);
            if (!r) goto error;
            Py_DECREF(r);
            if (PyByteArray_Resize(recorded, size + 1) < 0) goto error;
            PyByteArray_AS_STRING(recorded)[size] = (char)rec;
        }
        p_set(prof, self->po[P_LAST_KEY], SLOT(e, self->eo[E_MSG_KEY]));
        /* _pairs */
        if (kinds) {
            PyObject *pk = SLOT(prof, self->po[P_KINDS]);
            for (int k = 0; k < 6; k++)
                if (kv[k] && p_add(self, pk, self->kind_names[k], SLOT(kinds, self->ko[k])) < 0) goto error;
        }
        if (p_pair(out, self->w_assistant, SLOT(e, self->eo[E_CHARS])) < 0) goto error;
        if (p_add_pairs(self, prof, e, out, &total) < 0) goto error;
        ints[P_SINCE_CHARS] += total;
        if (rec) {
            if (placeholder) {
                has_anchor = 1, anchor = context;
                ints[P_SINCE_CHARS] = ints[P_RESPONSE_CHARS];
            } else {
                has_anchor = 1, anchor = context + u[1];
                ints[P_SINCE_CHARS] = 0;
            }
            if (p_set_int(prof, self->po[P_ANCHOR], anchor) < 0) goto error;
        }
        p_set(prof, self->po[P_PREV_ROLE], self->w_assistant);
        ints[P_CHARS_AFTER] = 0;
    } else {
        p_set(prof, self->po[P_PREV_ROLE], role);
        ints[P_CHARS_AFTER] += chars;
        if (user && !PyTuple_GET_SIZE(results) && !context) ints[P_USER_TURNS]++;
        /* _pairs */
        if (tool_chars) {
            Py_ssize_t pos = 0;
            PyObject *name, *n;
            while (PyDict_Next(tool_chars, &pos, &name, &n)) {
                if (p_tool(self, tools, name, 1, n) < 0) goto error;
                PyObject *cat = p_category(self, name);
                int r = cat ? p_pair(out, cat, n) : -1;
                Py_XDECREF(cat);
                if (r < 0) goto error;
            }
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(results); k++) {
                PyObject *gone = p_pop(pending, SLOT(PyTuple_GET_ITEM(results, k), self->ro[0]));
                if (!gone && PyErr_Occurred()) goto error;
                Py_XDECREF(gone);
            }
        } else if (PyTuple_GET_SIZE(results)) {
            if (p_result_pairs(self, prof, results, chars, out) < 0) goto error;
        } else if (p_pair(out, user ? self->w_user : self->w_other, SLOT(e, self->eo[E_CHARS])) < 0) {
            goto error;
        }
        if (p_add_pairs(self, prof, e, out, &total) < 0) goto error;
        ints[P_SINCE_CHARS] += total;
    }
    Py_DECREF(out);
    /* ---- what changed, written back */
    if (has_ts) {
        PyObject *t = SLOT(e, self->eo[E_TS]);
        if (set_first) p_set(prof, self->po[P_FIRST_TS], t);
        if (set_last) p_set(prof, self->po[P_LAST_TS], t);
        if (gap_added) {  /* _Welford.add */
            double mean = PyFloat_AS_DOUBLE(SLOT(gaps, self->wo[1])), m2 = PyFloat_AS_DOUBLE(SLOT(gaps, self->wo[2]));
            gap_n++;
            double d = gap - mean;
            mean += d / (double)gap_n;
            m2 += d * (gap - mean);
            if (p_set_int(gaps, self->wo[0], gap_n) < 0 || p_set_float(gaps, self->wo[1], mean) < 0
                || p_set_float(gaps, self->wo[2], m2) < 0)
                return NULL;
            if (gap >= P_IDLE_GAP && p_set_float(prof, self->po[P_IDLE_TIME], idle) < 0) return NULL;
        }
        p_set(prof, self->po[P_PREV_TS], t);
    }
    for (int k = 0; k < NPINTS; k++)
        if (was[k] != ints[k] && p_set_int(prof, self->pi[k], ints[k]) < 0) return NULL;
    self->taken++;
    Py_RETURN_TRUE;
error:
    Py_DECREF(out);
    return NULL;
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
    .tp_doc = "Profile(profiler_cls, welford_cls, main_thread_cls, full_cls, kinds_cls, call_cls, result_cls, usage_cls, "
              "EMPTY, UNSENT_STOPS, pending_cap): profile's per-message accounting.",
};
