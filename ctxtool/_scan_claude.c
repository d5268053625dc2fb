/* ctxtool._scan, included by _scan.c: the lines of a Claude Code file that formats.claude.normalize reads whole,
 * read by the C part's Meta (its ``full`` argument) as normalize, share_strings and release make their entry.
 *
 * Attachment lines: checked as a metadata line is, with what _attachment reads gathered on the way (``Att``):
 * ``attachment.type``, the rendered texts (their length in UTF-16 code units, whether each is white space only),
 * ``renderedRole`` and ``isSidechain``. Declined, as Meta declines a line: an escaped key, one of those keys written
 * twice (at the top, ``type`` in ``attachment``, ``content`` in a rendered item), an escaped kind or role, an
 * ``isSidechain`` other than true, false or null. tests/test_native_scan.py compares every recorded line and
 * thousands of variants with the Python. */



/* Python's str.isspace for one code point */
static inline int is_space_cp(unsigned u) {
    return (u >= 9 && u <= 13) || (u >= 0x1c && u <= 0x20) || u == 0x85 || u == 0xa0 || u == 0x1680
           || (u >= 0x2000 && u <= 0x200a) || u == 0x2028 || u == 0x2029 || u == 0x202f || u == 0x205f || u == 0x3000;
}

/* scan_string that also counts the string's UTF-16 code units and tells whether every character is white space
 * (true of the empty string). p just past the opening quote; NULL where scan_string gives NULL. */
static cp scan_text(cp p, cp end, long long *units, int *white) {
    long long n = 0;
    int w = 1;
    for (;;) {
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (!plain8(x)) break;
            if (w && x != ONES * ' ') w = 0;
            p += 8;
            n += 8;
        }
        if (p >= end) return NULL;
        unsigned char c = *p;
        if (c == '"') {
            *units = n;
            *white = w;
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c == '\\') {
            if (p + 1 >= end) return NULL;
            unsigned char e = p[1];
            if (e == '"' || e == '\\' || e == '/' || e == 'b') {
                w = 0;
                n++;
                p += 2;
                continue;
            }
            if (e == 'f' || e == 'n' || e == 'r' || e == 't') {
                n++;
                p += 2;
                continue;
            }
            if (e != 'u' || end - p < 6) return NULL;
            int a = hexval(p[2]), b = hexval(p[3]), c2 = hexval(p[4]), d = hexval(p[5]);
            if ((a | b | c2 | d) < 0) return NULL;
            unsigned u = (unsigned)(a << 12 | b << 8 | c2 << 4 | d);
            p += 6;
            if (u >= 0xD800 && u <= 0xDBFF) {  /* a high surrogate: a low one must follow (one character, 2 units) */
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return NULL;
                a = hexval(p[2]); b = hexval(p[3]); c2 = hexval(p[4]); d = hexval(p[5]);
                if ((a | b | c2 | d) < 0) return NULL;
                unsigned l = (unsigned)(a << 12 | b << 8 | c2 << 4 | d);
                if (l < 0xDC00 || l > 0xDFFF) return NULL;
                p += 6;
                n += 2;
                w = 0;
            } else if (u >= 0xDC00 && u <= 0xDFFF) {
                return NULL;
            } else {
                n++;
                if (w && !is_space_cp(u)) w = 0;
            }
            continue;
        }
        if (c >= 0x80) {
            int k = utf8_seq(p, end);
            if (!k) return NULL;
            if (k == 4) {
                n += 2;
                w = 0;
            } else {
                n++;
                if (w) {
                    unsigned u = k == 2 ? (unsigned)(c & 0x1f) << 6 | (p[1] & 0x3f)
                                        : (unsigned)(c & 0x0f) << 12 | (unsigned)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
                    if (!is_space_cp(u)) w = 0;
                }
            }
            p += k;
            continue;
        }
        if (c != ' ') w = 0;
        n++;
        p++;
    }
}

/* An object's members, p just past its '{' (values at ``depth``): the value of member ``key`` (``klen`` bytes) handed
 * to ``on_key`` (which scans it), every other value scanned. NULL when invalid, when a key is escaped (it could
 * spell ``key``) or ``key`` is written twice (Python keeps the last): the line is declined. */
typedef cp (*member_fn)(cp p, cp end, int depth, Att *a, void *state);

static cp members(cp p, cp end, int depth, const char *key, Py_ssize_t klen, member_fn on_key, Att *a, void *state) {
    int seen = 0;
    p = skip_ws(p, end);
    if (p < end && *p == '}') return p + 1;
    for (;;) {
        int esc;
        if (p >= end || *p != '"') return NULL;
        cp ks = p + 1;
        p = scan_string(ks, end, &esc);
        if (!p || esc) return NULL;
        int mine = p - 1 - ks == klen && memcmp(ks, key, (size_t)klen) == 0;
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        if (mine) {
            if (seen) return NULL;
            seen = 1;
            p = on_key(p, end, depth, a, state);
        } else {
            p = scan_value(p, end, depth);
        }
        if (!p) return NULL;
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        if (*p == '}') return p + 1;
        return NULL;
    }
}

/* attachment.type: its span when a string without escapes (an escaped one is declined) */
static cp att_type(cp p, cp end, int depth, Att *a, void *state) {
    if (p < end && *p == '"') {
        int esc;
        cp s = p + 1;
        p = scan_string(s, end, &esc);
        if (!p || esc) return NULL;
        a->kind_set = 1;
        a->kind_s = s;
        a->kind_e = p - 1;
        return p;
    }
    a->kind_set = 0;
    return scan_value(p, end, depth);
}

/* one rendered item's content: counted when a string (state: its units, -1 when no string) */
static cp item_content(cp p, cp end, int depth, Att *a, void *state) {
    long long *units = state;
    if (p < end && *p == '"') {
        int white;
        p = scan_text(p + 1, end, units, &white);
        if (p && white) *units = -2 - *units;  /* white space only: told apart (as -2 - units) */
        return p;
    }
    *units = -1;
    return scan_value(p, end, depth);
}

/* ``rendered`` when a list, p just past its '[' (items at depth 2) */
static cp rendered_list(cp p, cp end, Att *a) {
    p = skip_ws(p, end);
    if (p < end && *p == ']') return p + 1;
    for (;;) {
        if (p >= end) return NULL;
        if (*p == '{') {
            long long units = -1;  /* (no content member: as a content that is no string) */
            p = members(p + 1, end, 3, "content", 7, item_content, a, &units);
            if (!p) return NULL;
            int white = units <= -2;
            long long n = white ? -2 - units : units;
            if (n > 0) {  /* a non-empty string (an empty one is not sent) */
                a->texts++;
                a->units += n;
                if (white) a->blank = 1;
                else a->visible = 1;
            }
        } else {
            p = scan_value(p, end, 2);
            if (!p) return NULL;
        }
        p = skip_ws(p, end);
        if (p >= end) return NULL;
        if (*p == ',') { p = skip_ws(p + 1, end); continue; }
        if (*p == ']') return p + 1;
        return NULL;
    }
}

/* one of the AKEYS' values, p at its first byte */
static cp att_field(cp p, cp end, int which, Att *a) {
    if (p >= end) return NULL;
    switch (which) {
    case A_ATTACHMENT:
        return *p == '{' ? members(p + 1, end, 2, "type", 4, att_type, a, NULL) : scan_value(p, end, 1);
    case A_RENDERED:
        return *p == '[' ? rendered_list(p + 1, end, a) : scan_value(p, end, 1);
    case A_ROLE:
        if (*p == '"') {
            int esc;
            cp s = p + 1;
            p = scan_string(s, end, &esc);
            if (!p) return NULL;
            if (esc) a->odd = 1;
            else a->system = p - 1 - s == 6 && memcmp(s, "system", 6) == 0;
            return p;
        }
        return scan_value(p, end, 1);  /* any other value: "user" */
    default:  /* isSidechain: true, false or null; any other value is declined (its truth is Python's) */
        if (end - p >= 4 && memcmp(p, "true", 4) == 0) { a->side = 1; return p + 4; }
        if (end - p >= 5 && memcmp(p, "false", 5) == 0) return p + 5;
        if (end - p >= 4 && memcmp(p, "null", 4) == 0) return p + 4;
        a->odd = 1;
        return scan_value(p, end, 1);
    }
}

/* the entry formats.claude.normalize (its _attachment, then share_strings and release) makes of an attachment line:
 * a new FullEntry, or entry_to_tuple's tuple of it with ``tuples`` */
static PyObject *att_entry(Meta *self, Att *a, PyObject *index, PyObject *no, PyObject *start, PyObject *size,
                           PyObject *ty, PyObject *uuid, PyObject *parent, PyObject *ts) {
    PyObject *kind = NULL, *extra = NULL, *role = NULL, *nblocks = NULL, *chars = NULL, *kinds = NULL, *out = NULL;
    int message = a->texts > 0 && a->kind_set;
    if (a->kind_set) {
        if (!(kind = shared_str(self, a->kind_s, a->kind_e - a->kind_s))) goto done;
    } else {
        kind = Py_NewRef(Py_None);
    }
    if (!(extra = PyDict_New()) || PyDict_SetItem(extra, self->s[AS_ATTACHMENT], kind) < 0) goto done;
    if (message) {
        if (PyDict_SetItem(extra, self->s[AS_CONTEXT], self->s[a->system ? AS_SYSTEM : AS_USER]) < 0) goto done;
        if (a->side && PyDict_SetItem(extra, self->s[AS_SIDECHAIN], Py_True) < 0) goto done;
        role = self->shared == Py_None ? Py_NewRef(self->s[AS_USER])
                                       : Py_XNewRef(PyDict_SetDefault(self->shared, self->s[AS_USER], self->s[AS_USER]));
        if (!role) goto done;
        if (!(nblocks = PyLong_FromSsize_t(a->texts))) goto done;
        if (self->stats) {
            if (!(chars = PyLong_FromLongLong(a->units))) goto done;
            if (self->tuples) {
                kinds = PyTuple_Pack(6, chars, self->zero, self->zero, self->zero, self->zero, self->zero);
            } else {
                kinds = self->akinds->tp_alloc(self->akinds, 0);
                if (kinds) {
                    PyObject *v[6] = {chars, self->zero, self->zero, self->zero, self->zero, self->zero};
                    for (int k = 0; k < 6; k++) *(PyObject **)((char *)kinds + self->akoff[k]) = Py_NewRef(v[k]);
                }
            }
            if (!kinds) goto done;
        }
    }
    PyObject *v_kind = message ? self->message : self->meta, *v_role = role ? role : Py_None;
    PyObject *v_nblocks = nblocks ? nblocks : self->zero, *v_chars = chars ? chars : self->zero;
    PyObject *v_empty = message && !a->visible ? Py_True : Py_False, *v_blank = message && a->blank ? Py_True : Py_False;
    if (self->tuples) {
        PyObject *v[25] = {index, no, start, size, self->eol, v_kind, ty, uuid, parent, v_role, Py_None, Py_None, ts,
                           Py_None, Py_None, Py_None, v_nblocks, v_empty, v_blank, Py_False, v_chars,
                           kinds ? kinds : Py_None, Py_None, Py_None, extra};
        out = PyTuple_New(25);
        if (out)
            for (int k = 0; k < 25; k++) PyTuple_SET_ITEM(out, k, Py_NewRef(v[k]));
    } else {
        PyObject *empty_tuple = PyTuple_New(0);  /* the () singleton */
        PyObject *v[NFULL];
        v[F_INDEX] = index; v[F_LINENO] = no; v[F_OFFSET] = start; v[F_LENGTH] = size; v[F_EOL] = self->eol;
        v[F_KIND] = v_kind; v[F_TYPE] = ty; v[F_ID] = uuid; v[F_PARENT] = parent; v[F_ROLE] = v_role; v[F_TS] = ts;
        v[F_OBJ] = v[F_BLOCKS] = v[F_M] = v[F_STOP] = v[F_MSG_KEY] = v[F_MODEL] = v[F_USAGE] = Py_None;
        v[F_CALLS] = v[F_RESULTS] = empty_tuple;
        v[F_NBLOCKS] = v_nblocks; v[F_EMPTY] = v_empty; v[F_BLANK] = v_blank; v[F_SIGNED] = Py_False;
        v[F_CHARS] = v_chars; v[F_KINDS] = kinds ? kinds : self->empty; v[F_TOOL_CHARS] = self->empty;
        v[F_EXTRA] = extra;
        out = self->afull->tp_alloc(self->afull, 0);
        if (out)
            for (int k = 0; k < NFULL; k++) *(PyObject **)((char *)out + self->afoff[k]) = Py_NewRef(v[k]);
        Py_DECREF(empty_tuple);
    }
done:
    Py_XDECREF(kind);
    Py_XDECREF(extra);
    Py_XDECREF(role);
    Py_XDECREF(nblocks);
    Py_XDECREF(chars);
    Py_XDECREF(kinds);
    return out;
}

