/* ctxtool._scan, included by _scan.c after _scan_claude.c: a pi session's common lines normalized in C.
 *
 * A ``Whole`` given ``pi=`` (a dict: what _scan_claude.c's blocks are read with, see claude_parts) makes of a parsed
 * pi line what the scan makes of it when nobody reads its blocks: ``full_entry`` + ``formats.pi.normalize(obj, e,
 * blocks=False, stats)`` + ``share_strings(e, shared)`` + ``e.release()``. It takes the lines pi writes most: messages
 * of role user, assistant, toolResult and custom (their blocks read by blocks_facts, scan_anthropic_blocks' port),
 * and the entries that carry no message (custom, model_change, thinking_level_change, label, session_info and other
 * types pi places but never sends). It declines (None, having changed nothing) the header, compactions, branch
 * summaries, custom messages, bash executions, hook messages and unsent roles, a message without a role, a parent
 * that is neither a string nor null, a time that is an absurd number or a string of another form than
 * YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]Z, an absurd token count, a recorded context window, and whatever blocks_facts
 * declines: the Python reads those lines (tests/test_pi_native.py compares both on every pi line of the fixtures and
 * of generated sessions, and on variants of them). Every string the entry holds goes through the string table, as
 * share_strings puts it there (pi's ids are short, and a parent is its parent's id). */

enum {
    P_TYPE, P_ID, P_PARENT, P_TIMESTAMP, P_MESSAGE, P_ROLE, P_CONTENT, P_TOOL_CALL_ID, P_TOOL_USE_ID, P_TOOL_NAME,
    P_IS_ERROR, P_STOP_REASON, P_MODEL, P_USAGE, P_INPUT, P_OUTPUT, P_CACHE_READ, P_CACHE_WRITE, P_TOTAL_TOKENS,
    P_PROVIDER, P_SYNTHETIC_MODEL, P_CUSTOM_TYPE, P_DATA, P_MODEL_ID, P_CONTEXT_WINDOW, P_CUSTOM_TYPE_X, P_DATA_TS,
    P_UNKNOWN, P_TYPE_TEXT, P_IMAGE, NPS
};
static const char *PI_STR[NPS] = {
    "type", "id", "parentId", "timestamp", "message", "role", "content", "toolCallId", "toolUseId", "toolName",
    "isError", "stopReason", "model", "usage", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "provider",
    "synthetic_model", "customType", "data", "modelId", "contextWindow", "custom_type", "data_ts", "unknown", "text",
    "image"};

struct PiParts {
    PyObject *s[NPS];
    ClaudeParts *cl;  /* the blocks' strings, model's Call, Result and Usage, formats.common's args_chars and call_problem */
};

static void pi_parts_free(PiParts *p) {
    if (!p) return;
    for (int k = 0; k < NPS; k++) Py_XDECREF(p->s[k]);
    claude_parts_free(p->cl);
    PyMem_Free(p);
}

static PiParts *pi_parts(PyObject *d) {
    PiParts *p = PyMem_Calloc(1, sizeof(PiParts));
    if (!p) { PyErr_NoMemory(); return NULL; }
    if (!(p->cl = claude_parts(d))) {
        PyMem_Free(p);
        return NULL;
    }
    for (int k = 0; k < NPS; k++) {
        if (!(p->s[k] = PyUnicode_InternFromString(PI_STR[k]))) {
            pi_parts_free(p);
            return NULL;
        }
    }
    return p;
}

/* formats.common.ts_field of a value: 1 and *when (*has set) for a time, 1 with *has = 0 for none (null, absent, a value
 * parse_ts reads as none), 0 (declined) for an absurd number (Python notes it) or a string iso_z does not read */
static int pi_time(PyObject *v, double *when, int *has) {
    *has = 0;
    if (!v) return 1;
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (overflow || x < -62135596800000LL || x > 253402300799999LL) return 0;
        *when = (double)x / 1000.0;
        *has = 1;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        double x = PyFloat_AS_DOUBLE(v);
        if (!(x >= -62135596800000.0 && x <= 253402300799999.0)) return 0;  /* (NaN fails) */
        *when = x / 1000.0;
        *has = 1;
        return 1;
    }
    if (PyUnicode_CheckExact(v)) {
        if (!PyUnicode_IS_COMPACT_ASCII(v) || !iso_z((cp)PyUnicode_DATA(v), PyUnicode_GET_LENGTH(v), when)) return 0;
        *has = 1;
        return 1;
    }
    return 1;  /* true, false, an object, an array: no time */
}

/* the shared table's string for s (a new reference), or NULL on error */
#define SHARED(dst, s) ((dst) = share(shared, (s)))

/* a toolResult message's facts (normalize's toolResult branch) */
static int pi_result(Whole *self, PiParts *pp, PyObject *m, int stats, PyObject *shared, CF *f) {
    PyObject **s = pp->s;
    PyObject *content = get(m, s[P_CONTENT]);
    PyObject *call_id = get(m, s[P_TOOL_CALL_ID]);
    if (!IS_STR(call_id)) {
        call_id = get(m, s[P_TOOL_USE_ID]);
        if (!IS_STR(call_id)) call_id = pp->cl->s[C_EMPTY_STR];
    }
    PyObject *name = get(m, s[P_TOOL_NAME]);
    if (!IS_STR(name)) name = NULL;
    PyObject *err = get(m, s[P_IS_ERROR]);
    int is_error = err ? PyObject_IsTrue(err) : 0;
    if (is_error < 0) return CL_FAIL;
    long long text = 0, images = 0, chars = 0;
    if (stats) {  /* result_content_chars */
        if (content && PyUnicode_CheckExact(content)) {
            text = js_len_(content);
        } else if (content && PyList_CheckExact(content)) {
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(content); j++) {
                PyObject *x = PyList_GET_ITEM(content, j);
                if (!PyDict_CheckExact(x)) continue;
                PyObject *xt = get(x, s[P_TYPE]);
                if (is(xt, "text")) {
                    long long n;
                    if (!text_len(get(x, s[P_TYPE_TEXT]), &n)) return CL_DECLINE;
                    text += n;
                } else if (is(xt, "image")) {
                    images++;
                }
            }
        } else if (content && content != Py_None && (PyUnicode_Check(content) || PyList_Check(content))) {
            return CL_DECLINE;  /* (a subclass: not from orjson) */
        }
        chars = text + images * pp->cl->image_chars;
        f->chars = chars;
        f->kinds_always = 1;
        f->k[3] = text;
        f->k[4] = images * pp->cl->image_chars;
    }
    PyObject *sid = NULL, *sname = NULL;
    if (!SHARED(sid, call_id)) return CL_FAIL;
    if (name && !SHARED(sname, name)) { Py_DECREF(sid); return CL_FAIL; }
    int r = add_item(&f->results, 0, sid, sname ? sname : Py_None, is_error ? Py_True : Py_False, chars);
    Py_DECREF(sid);
    if (r < 0) { Py_XDECREF(sname); return CL_FAIL; }
    if (stats) {  /* {name or "unknown": chars} */
        PyObject *key = sname && PyUnicode_GET_LENGTH(sname) ? Py_NewRef(sname) : share(shared, s[P_UNKNOWN]);
        PyObject *n = key ? PyLong_FromLongLong(chars) : NULL;
        if (n && (f->tool_chars = PyDict_New()) && PyDict_SetItem(f->tool_chars, key, n) < 0) Py_CLEAR(f->tool_chars);
        Py_XDECREF(key);
        Py_XDECREF(n);
        if (!f->tool_chars) { Py_XDECREF(sname); return CL_FAIL; }
    }
    Py_XDECREF(sname);
    f->nblocks = 1;
    f->empty = 0;
    return CL_MADE;
}

/* an assistant message's stop reason, model, usage and synthetic model (normalize's assistant part) */
static int pi_assistant(PiParts *pp, PyObject *m, int stats, PyObject *shared, CF *f) {
    PyObject **s = pp->s;
    PyObject *stop = get(m, s[P_STOP_REASON]), *model = get(m, s[P_MODEL]);
    if (IS_STR(stop) && !SHARED(f->stop, stop)) return CL_FAIL;
    if (IS_STR(model) && !SHARED(f->model, model)) return CL_FAIL;
    PyObject *u = stats ? get(m, s[P_USAGE]) : NULL;
    if (u && PyDict_Check(u)) {
        static const int keys[5] = {P_INPUT, P_OUTPUT, P_CACHE_READ, P_CACHE_WRITE, P_TOTAL_TOKENS};
        for (int k = 0; k < 5; k++)
            if (!tokens(get(u, s[keys[k]]), &f->usage[k])) return CL_DECLINE;  /* absurd: Python notes it */
        f->has_usage = 1;
    }
    if (f->model && PyUnicode_GET_LENGTH(f->model) && is(get(m, s[P_PROVIDER]), "openclaw")) {
        PyObject *mv = get(m, s[P_MODEL]);
        if (!(f->extra = PyDict_New()) || PyDict_SetItem(f->extra, s[P_SYNTHETIC_MODEL], mv) < 0) return CL_FAIL;
    }
    return CL_MADE;
}

/* a message line's facts and time (normalize's message branch) */
static int pi_message(Whole *self, PiParts *pp, PyObject *obj, int stats, PyObject *shared, CF *f, double *when, int *has) {
    PyObject **s = pp->s;
    PyObject *m = get(obj, s[P_MESSAGE]);
    if (!m || !PyDict_CheckExact(m)) return CL_DECLINE;
    PyObject *role = get(m, s[P_ROLE]);
    if (!IS_STR(role)) return CL_DECLINE;
    PyObject *mts = get(m, s[P_TIMESTAMP]);
    if (mts && (PyLong_CheckExact(mts) || PyFloat_CheckExact(mts))) {
        if (!pi_time(mts, when, has)) return CL_DECLINE;
    } else if (!pi_time(get(obj, s[P_TIMESTAMP]), when, has)) {
        return CL_DECLINE;
    }
    int code;  /* blocks_facts' role */
    if (is(role, "assistant")) code = 1;
    else if (is(role, "custom")) code = 2;
    else if (is(role, "user") || is(role, "branchSummary") || is(role, "compactionSummary") || is(role, "toolResult"))
        code = 0;
    else return CL_DECLINE;  /* bashExecution, hookMessage, unsent roles */
    f->kind = self->message;
    if (!SHARED(f->role, role)) return CL_FAIL;
    if (is(role, "toolResult")) return pi_result(self, pp, m, stats, shared, f);
    PyObject *content = get(m, s[P_CONTENT]);
    int r;
    if (content && PyUnicode_CheckExact(content)) {  /* text_only */
        Py_ssize_t visible = 0;
        text_fact(f, content, stats, &visible);
        f->nblocks = 1;
        f->empty = visible == 0;
    } else if (content && PyList_CheckExact(content)) {
        if ((r = blocks_facts(pp->cl, shared, stats, content, code, f)) != CL_MADE) return r;
    } else if (content && (PyUnicode_Check(content) || PyList_Check(content))) {
        return CL_DECLINE;
    } else {  /* no blocks */
        f->empty = 1;
    }
    return code == 1 ? pi_assistant(pp, m, stats, shared, f) : CL_MADE;
}

/* an entry that carries no message: its time, and what normalize keeps of a custom or model_change entry */
static int pi_other(Whole *self, PiParts *pp, PyObject *obj, PyObject *t, CF *f, double *when, int *has) {
    PyObject **s = pp->s;
    if (is(t, "session") || is(t, "compaction") || is(t, "branch_summary") || is(t, "custom_message")) return CL_DECLINE;
    if (!pi_time(get(obj, s[P_TIMESTAMP]), when, has)) return CL_DECLINE;
    PyObject *data = get(obj, s[P_DATA]);
    if (data && !PyDict_CheckExact(data)) {
        if (PyDict_Check(data)) return CL_DECLINE;
        data = NULL;
    }
    if (get(obj, s[P_CONTEXT_WINDOW]) || (data && get(data, s[P_CONTEXT_WINDOW]))) return CL_DECLINE;
    f->kind = self->meta;
    PyObject *none = Py_None;
    if (is(t, "custom")) {
        PyObject *v[4] = {get(obj, s[P_CUSTOM_TYPE]), data ? get(data, s[P_TIMESTAMP]) : NULL,
                          data ? get(data, s[P_PROVIDER]) : NULL, data ? get(data, s[P_MODEL_ID]) : NULL};
        static const int keys[4] = {P_CUSTOM_TYPE_X, P_DATA_TS, P_PROVIDER, P_MODEL};
        if (!(f->extra = PyDict_New())) return CL_FAIL;
        for (int k = 0; k < 4; k++)
            if (PyDict_SetItem(f->extra, s[keys[k]], v[k] ? v[k] : none) < 0) return CL_FAIL;
    } else if (is(t, "model_change")) {
        PyObject *p = get(obj, s[P_PROVIDER]), *mo = get(obj, s[P_MODEL_ID]);
        if (!(f->extra = PyDict_New()) || PyDict_SetItem(f->extra, s[P_PROVIDER], p ? p : none) < 0
            || PyDict_SetItem(f->extra, s[P_MODEL], mo ? mo : none) < 0)
            return CL_FAIL;
    }
    return CL_MADE;
}

/* the entry of a parsed pi line (a new reference; its tuple with ``tuples``), None when declined, NULL on error */
static PyObject *pi_make(Whole *self, PyObject *obj, PyObject *index, PyObject *lineno, PyObject *offset,
                         PyObject *length, PyObject *eol, int stats, PyObject *shared, int tuples) {
    PiParts *pp = self->pi;
    PyObject **s = pp->s;
    if (!PyDict_CheckExact(obj) || (shared != Py_None && !PyDict_CheckExact(shared))) Py_RETURN_NONE;
    PyObject *t = get(obj, s[P_TYPE]), *id = get(obj, s[P_ID]), *pid = get(obj, s[P_PARENT]);
    if (!IS_STR(t) || !(NULLISH(pid) || PyUnicode_CheckExact(pid))) Py_RETURN_NONE;  /* parent_of's marks: Python's */
    if (id && !PyUnicode_CheckExact(id) && PyUnicode_Check(id)) Py_RETURN_NONE;
    CF f = {0};
    f.kind = self->meta;
    double when = 0;
    int has = 0;
    int r = is(t, "message") ? pi_message(self, pp, obj, stats, shared, &f, &when, &has)
                             : pi_other(self, pp, obj, t, &f, &when, &has);
    PyObject *out = NULL, *ty = NULL, *sid = NULL, *spid = NULL, *ts = NULL;
    if (r == CL_DECLINE) {
        out = Py_NewRef(Py_None);
    } else if (r == CL_MADE && SHARED(ty, t)
               && (!(IS_STR(id) && PyUnicode_GET_LENGTH(id)) || SHARED(sid, id))
               && (!IS_STR(pid) || SHARED(spid, pid))
               && (!has || (ts = PyFloat_FromDouble(when)))) {
        Maker mk = {tuples, self->full, (PyTypeObject *)self->kinds, (PyTypeObject *)self->call,
                    (PyTypeObject *)self->result, (PyTypeObject *)self->usage, self->foff, self->koff, self->coff,
                    self->roff, self->uoff, eol, self->zero, self->empty};
        out = facts_entry(&mk, &f, index, lineno, offset, length, ty, sid ? sid : Py_None, spid ? spid : Py_None,
                          ts ? ts : Py_None);
    }
    Py_XDECREF(ty);
    Py_XDECREF(sid);
    Py_XDECREF(spid);
    Py_XDECREF(ts);
    cf_clear(&f);
    return out;
}
