package reports

import (
	"bytes"
	"html/template"
	"path/filepath"
)

const repeatSource = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Scenario}}: {{len .Runs}} runs</title>
<style>body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;color:#333a44}
table{border-collapse:collapse}td,th{padding:.3rem .7rem;border-bottom:1px solid #e3e6ea;text-align:left}
.bar{display:inline-block;height:.8rem;background:#2c7a2c;vertical-align:middle}.band{display:inline-block;position:relative;width:12rem;height:.8rem;background:#e3e6ea}
.ci{position:absolute;top:0;height:.8rem;background:#9bc79b}.pt{position:absolute;top:-.15rem;width:2px;height:1.1rem;background:#1a4d1a}</style></head>
<body><h1>{{.Scenario}}: {{len .Runs}} runs</h1>
<p>Expectation met in {{.Met}} of {{len .Runs}} runs (seeds {{.Seeds}}).</p>
<table><tr><th>Variant</th><th>Expected</th><th>Reached</th><th>Rate</th><th>95% Wilson interval</th><th></th></tr>
{{range .Variants}}<tr><td>{{.Variant}}</td><td>{{.Expect}}</td><td>{{.Reached}}/{{.Runs}}</td><td>{{printf "%.0f%%" (pct .Rate)}}</td>
<td>{{printf "%.0f%%" (pct .Low)}}-{{printf "%.0f%%" (pct .High)}}</td>
<td><span class="band"><span class="ci" style="left:{{pct .Low}}%;width:{{width .Low .High}}%"></span><span class="pt" style="left:{{pct .Rate}}%"></span></span></td></tr>
{{end}}</table>
<h2>Runs</h2><ul>{{range $i, $r := .Links}}<li><a href="{{$r.Href}}">seed {{$r.Seed}}</a>: {{$r.Verdict}}</li>{{end}}</ul>
</body></html>
`

type repeatLink struct {
	Href    string
	Seed    int64
	Verdict string
}

func (rep *Repeat) html() string {
	var links []repeatLink
	for i, r := range rep.Runs {
		links = append(links, repeatLink{Href: filepath.ToSlash(filepath.Join(r, "index.html")), Seed: rep.Seeds[i], Verdict: string(rep.Reports[i].Verdict)})
	}
	var b bytes.Buffer
	data := struct {
		*Repeat
		Links []repeatLink
	}{rep, links}
	if err := repeatTemplate().Execute(&b, data); err != nil {
		return "<p>" + template.HTMLEscapeString(err.Error()) + "</p>"
	}
	return b.String()
}

func repeatTemplate() *template.Template {
	return template.Must(template.New("repeat").Funcs(template.FuncMap{
		"pct":   func(x float64) float64 { return 100 * x },
		"width": func(lo, hi float64) float64 { return 100 * (hi - lo) },
	}).Parse(repeatSource))
}
