(section
  (atx_heading
    (atx_h2_marker)
    heading_content: (_) @role
  )
) @content

(section
  (atx_heading) @role
  (#eq? @role "Response")
) @content
