(section
  (atx_heading
    (atx_h2_marker)
    heading_content: (_) @role
  )
  (_) @content
)

(section
  (atx_heading
    (atx_h2_marker)
    heading_content: (_) @role_only
  )
)

(section
  (fenced_code_block
    (code_fence_content) @code
  )
)
